package childcache

import (
	"sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxSharedKeys bounds the label and annotation keys a cache shares: keys are few (the app.kubernetes.io
// labels, the tracking marks, a controller's own), so the bound is only a guard against objects that
// use keys as data.
const maxSharedKeys = 4096

// keyTable makes the cached objects of one cache share one copy of each label and annotation key.
// The JSON decoder gives every object its own copy of every key, and keys are most of an object's
// metadata: "app.kubernetes.io/managed-by" on every child, in its labels, its pod template's labels
// and selectors. Values are left alone.
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

// share replaces the keys of m by the table's copies, in place: assigning to an existing key stores
// the key given (Go updates a string key on assignment), so no map is rebuilt.
func (t *keyTable) share(m map[string]string) {
	for k, v := range m {
		m[t.shared(k)] = v
	}
}

// transform shares the keys of an object's labels and annotations, and of the label maps inside the
// pod templates, selectors and Service selectors of the common kinds. Anything else passes unchanged.
func (t *keyTable) transform(in any) (any, error) {
	if o, ok := in.(metav1.Object); ok {
		t.share(o.GetLabels())
		t.share(o.GetAnnotations())
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
