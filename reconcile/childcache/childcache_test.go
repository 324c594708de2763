package childcache

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestConfigure(t *testing.T) {
	cases := map[string]struct {
		opts func() cache.Options
		// calls: Configure is called once per entry with these kinds.
		calls [][]client.Object
		// want: the label selector of each kind's entry, and its namespaces.
		want map[string]string
	}{
		"nothing set": {
			opts:  func() cache.Options { return cache.Options{} },
			calls: [][]client.Object{{&corev1.ConfigMap{}, &appsv1.Deployment{}}},
			want:  map[string]string{"*v1.ConfigMap": "convergo.dev/owner-uid", "*v1.Deployment": "convergo.dev/owner-uid"},
		},
		"an entry's own selector and namespaces are kept": {
			opts: func() cache.Options {
				return cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {
					Label: labels.SelectorFromSet(labels.Set{"team": "a"}), Namespaces: map[string]cache.Config{"ns": {}}}}}
			},
			calls: [][]client.Object{{&corev1.ConfigMap{}}},
			want:  map[string]string{"*v1.ConfigMap": "convergo.dev/owner-uid,team=a ns"},
		},
		"the default selector is combined": {
			opts: func() cache.Options {
				return cache.Options{DefaultLabelSelector: labels.SelectorFromSet(labels.Set{"env": "prod"})}
			},
			calls: [][]client.Object{{&corev1.Service{}}},
			want:  map[string]string{"*v1.Service": "convergo.dev/owner-uid,env=prod"},
		},
		"two controllers of one manager list the same kind": {
			opts:  func() cache.Options { return cache.Options{} },
			calls: [][]client.Object{{&appsv1.Deployment{}}, {&appsv1.Deployment{}, &corev1.Service{}}},
			want:  map[string]string{"*v1.Deployment": "convergo.dev/owner-uid", "*v1.Service": "convergo.dev/owner-uid"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			opts := tc.opts()
			for _, kinds := range tc.calls {
				Configure(&opts, kinds...)
			}
			got := map[string]string{}
			for k, v := range opts.ByObject {
				s := v.Label.String()
				for ns := range v.Namespaces {
					s += " " + ns
				}
				got[fmt.Sprintf("%T", k)] = s
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ByObject (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConfigureTransform: managedFields are dropped, then an existing transform runs.
func TestConfigureTransform(t *testing.T) {
	opts := cache.Options{DefaultTransform: func(in any) (any, error) {
		in.(*corev1.ConfigMap).Labels = map[string]string{"seen-by": "user transform"}
		return in, nil
	}}
	Configure(&opts)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
	out, err := opts.DefaultTransform(cm)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.ConfigMap)
	if diff := cmp.Diff([]any{0, map[string]string{"seen-by": "user transform"}}, []any{len(got.ManagedFields), got.Labels}); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestConfigureSharesKeys: the transform makes cached objects share one copy of each label and
// annotation key (metadata, pod template, selectors), of the values that repeat from object to
// object (an application's labels, the owner's kind and namespace), of the namespace and of the
// owner references' API version and kind, leaves other values alone, and changes no content.
func TestConfigureSharesKeys(t *testing.T) {
	var opts cache.Options
	Configure(&opts, &appsv1.Deployment{})
	// Each object gets its own copy of every string, as the JSON decoder gives it.
	own := func(s string) string { return string([]byte(s)) }
	deployment := func() *appsv1.Deployment {
		labels := map[string]string{own("app.kubernetes.io/name"): own("web"), own("app.kubernetes.io/instance"): own("alice")}
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{
				Name: "web", Namespace: own("team-a"), Labels: labels,
				Annotations: map[string]string{
					own("convergo.dev/owner-namespace"): own("team-a"), own("convergo.dev/node"): own("deployment"),
					own("convergo.dev/depends-on"): own("page"), own("convergo.dev/intent-hash"): own("7ab2220a4a086d08bd1c"),
				},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: own("web.convergo.dev/v1"), Kind: own("Welcome"), Name: "alice", UID: "u"}},
			},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{own("app.kubernetes.io/name"): own("web")}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{own("app.kubernetes.io/name"): own("web")}}},
			},
		}
	}
	type where struct {
		name                             string
		at                               func(d *appsv1.Deployment) string
		shared, sharedWithSelectorLabels bool
	}
	places := []where{
		{name: "label key", at: func(d *appsv1.Deployment) string { return keyOf(d.Labels, "app.kubernetes.io/name") }, shared: true},
		{name: "selector key", at: func(d *appsv1.Deployment) string { return keyOf(d.Spec.Selector.MatchLabels, "app.kubernetes.io/name") }, shared: true},
		{name: "pod label key", at: func(d *appsv1.Deployment) string { return keyOf(d.Spec.Template.Labels, "app.kubernetes.io/name") }, shared: true},
		{name: "annotation key", at: func(d *appsv1.Deployment) string { return keyOf(d.Annotations, "convergo.dev/owner-namespace") }, shared: true},
		{name: "application label value", at: func(d *appsv1.Deployment) string { return d.Labels["app.kubernetes.io/name"] }, shared: true},
		{name: "pod label value", at: func(d *appsv1.Deployment) string { return d.Spec.Template.Labels["app.kubernetes.io/name"] }, shared: true},
		{name: "owner namespace value", at: func(d *appsv1.Deployment) string { return d.Annotations["convergo.dev/owner-namespace"] }, shared: true},
		{name: "namespace", at: func(d *appsv1.Deployment) string { return d.Namespace }, shared: true},
		{name: "owner API version", at: func(d *appsv1.Deployment) string { return d.OwnerReferences[0].APIVersion }, shared: true},
		{name: "owner kind", at: func(d *appsv1.Deployment) string { return d.OwnerReferences[0].Kind }, shared: true},
		{name: "node value", at: func(d *appsv1.Deployment) string { return d.Annotations["convergo.dev/node"] }, shared: true},
		{name: "depends-on value", at: func(d *appsv1.Deployment) string { return d.Annotations["convergo.dev/depends-on"] }, shared: true},
		{name: "instance label value", at: func(d *appsv1.Deployment) string { return d.Labels["app.kubernetes.io/instance"] }, shared: false},
		{name: "intent hash value", at: func(d *appsv1.Deployment) string { return d.Annotations["convergo.dev/intent-hash"] }, shared: false},
	}
	var objs []*appsv1.Deployment
	for range 2 {
		d := deployment()
		want := d.DeepCopy()
		out, err := opts.DefaultTransform(d)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, out); diff != "" {
			t.Errorf("the transform changed the object (-want +got):\n%s", diff)
		}
		objs = append(objs, d)
	}
	var got, want []string
	for _, p := range places {
		same := unsafe.StringData(p.at(objs[0])) == unsafe.StringData(p.at(objs[1]))
		got = append(got, fmt.Sprintf("%s shared: %v", p.name, same))
		want = append(want, fmt.Sprintf("%s shared: %v", p.name, p.shared))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("two cached objects (-want +got):\n%s", diff)
	}
	if unsafe.StringData(keyOf(objs[0].Labels, "app.kubernetes.io/name")) != unsafe.StringData(keyOf(objs[0].Spec.Template.Labels, "app.kubernetes.io/name")) {
		t.Error("the labels and the pod template of one object keep separate copies of one key")
	}
}

// keyOf returns m's own copy of key k ("" when m has no such key).
func keyOf(m map[string]string, k string) string {
	for key := range m {
		if key == k {
			return key
		}
	}
	return ""
}

// TestKinds: the kinds Configure filtered, whatever else the options hold, in a stable order.
func TestKinds(t *testing.T) {
	cases := map[string]struct {
		opts func() cache.Options
		want []string
	}{
		"nothing configured": {opts: func() cache.Options { return cache.Options{} }},
		"configured kinds only": {
			opts: func() cache.Options {
				opts := cache.Options{ByObject: map[client.Object]cache.ByObject{
					&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{"team": "a"})}}}
				Configure(&opts, &corev1.Service{}, &appsv1.Deployment{}, &corev1.ConfigMap{})
				return opts
			},
			want: []string{"*v1.ConfigMap", "*v1.Deployment", "*v1.Service"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, k := range Kinds(tc.opts()) {
				got = append(got, fmt.Sprintf("%T", k))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Kinds (-want +got):\n%s", diff)
			}
		})
	}
}
