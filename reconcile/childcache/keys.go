package childcache

import (
	"sync"
	"sync/atomic"

	"github.com/convergo-dev/convergo/internal/marks"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxSharedKeys bounds the strings a cache shares: keys and the values below are few (the
// app.kubernetes.io labels, the tracking marks, a controller's own, the namespaces), so the bound is
// only a guard against objects that use keys as data.
const maxSharedKeys = 4096

// sharedValues are the label and annotation keys whose values repeat from object to object: the
// tracking marks that name the owner's kind, group and namespace, the graph node a child is and the
// nodes it depends on (the same for every owner of a graph), and the app.kubernetes.io labels that name
// an application rather than one instance of it. Their values are shared as keys are; the values of
// any other key (an instance, a UID, a hash) are left alone.
var sharedValues = map[string]bool{
	marks.OwnerKind:                true,
	marks.OwnerGroup:               true,
	marks.OwnerNamespace:           true,
	marks.Node:                     true,
	marks.DependsOn:                true,
	"app.kubernetes.io/name":       true,
	"app.kubernetes.io/component":  true,
	"app.kubernetes.io/part-of":    true,
	"app.kubernetes.io/managed-by": true,
	"app.kubernetes.io/version":    true,
}

// keyTable makes the cached objects of one cache share one copy of each label and annotation key,
// of the values of sharedValues, of namespaces and of the owner references' API versions and kinds.
// The JSON decoder gives every object its own copy of each: "app.kubernetes.io/managed-by" on every
// child, in its labels, its pod template's labels and selectors. Other values are left alone.
type keyTable struct {
	keys sync.Map // string -> string
	n    atomic.Int32
}

// shared returns the table's copy of k, adding k while the table has room.
func (t *keyTable) shared(k string) string {
	if v, ok := t.keys.Load(k); ok {
		return v.(string)
	}
	if t.n.Load() >= maxSharedKeys {
		return k
	}
	v, loaded := t.keys.LoadOrStore(k, k)
	if !loaded {
		t.n.Add(1)
	}
	return v.(string)
}

// share replaces the keys of m, and the values of sharedValues, by the table's copies, in place:
// assigning to an existing key stores the key given (Go updates a string key on assignment), so no
// map is rebuilt.
func (t *keyTable) share(m map[string]string) {
	for k, v := range m {
		k = t.shared(k)
		if sharedValues[k] {
			v = t.shared(v)
		}
		m[k] = v
	}
}

// transform shares the keys of an object's labels and annotations (and the values of sharedValues),
// its namespace, its owner references' API versions and kinds, and the keys of the label maps inside
// the pod templates, selectors and Service selectors of the common kinds. Anything else passes
// unchanged.
func (t *keyTable) transform(in any) (any, error) {
	if o, ok := in.(metav1.Object); ok {
		t.share(o.GetLabels())
		t.share(o.GetAnnotations())
		if ns := o.GetNamespace(); ns != "" {
			o.SetNamespace(t.shared(ns))
		}
		refs := o.GetOwnerReferences() // the object's own slice
		for i := range refs {
			refs[i].APIVersion, refs[i].Kind = t.shared(refs[i].APIVersion), t.shared(refs[i].Kind)
		}
	}
	switch o := in.(type) {
	case *appsv1.Deployment:
		t.podTemplate(&o.Spec.Template, o.Spec.Selector)
	case *appsv1.StatefulSet:
		t.podTemplate(&o.Spec.Template, o.Spec.Selector)
	case *appsv1.DaemonSet:
		t.podTemplate(&o.Spec.Template, o.Spec.Selector)
	case *appsv1.ReplicaSet:
		t.podTemplate(&o.Spec.Template, o.Spec.Selector)
	case *batchv1.Job:
		t.podTemplate(&o.Spec.Template, o.Spec.Selector)
	case *corev1.Service:
		t.share(o.Spec.Selector)
	}
	return in, nil
}

func (t *keyTable) podTemplate(p *corev1.PodTemplateSpec, sel *metav1.LabelSelector) {
	t.share(p.Labels)
	t.share(p.Annotations)
	if sel != nil {
		t.share(sel.MatchLabels)
	}
}
