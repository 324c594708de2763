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
// annotation key (metadata, pod template, selectors), and changes no content.
func TestConfigureSharesKeys(t *testing.T) {
	var opts cache.Options
	Configure(&opts, &appsv1.Deployment{})
	// Each object gets its own copy of every key, as the JSON decoder gives it.
	own := func(s string) string { return string([]byte(s)) }
	deployment := func() *appsv1.Deployment {
		labels := map[string]string{own("app.kubernetes.io/name"): "web"}
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: labels, Annotations: map[string]string{own("convergo.dev/node"): "web"}},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{own("app.kubernetes.io/name"): "web"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{own("app.kubernetes.io/name"): "web"}}},
			},
		}
	}
	var keys [][]*byte
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
		keys = append(keys, []*byte{keyData(d.Labels), keyData(d.Annotations), keyData(d.Spec.Selector.MatchLabels), keyData(d.Spec.Template.Labels)})
	}
	for i, k := range keys[0] {
		if k != keys[1][i] {
			t.Errorf("key %d: two objects keep two copies", i)
		}
	}
	if keys[0][0] != keys[0][2] || keys[0][0] != keys[0][3] {
		t.Error("the labels, the selector and the pod template of one object keep separate copies of one key")
	}
}

// keyData returns where the bytes of the one key of m are.
func keyData(m map[string]string) *byte {
	for k := range m {
		return unsafe.StringData(k)
	}
	return nil
}
