package builders_test

import (
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/builders"
)

func toUnstructured(t *testing.T, obj client.Object) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatalf("to unstructured: %v", err)
	}
	return &unstructured.Unstructured{Object: content}
}

func TestConfigHash(t *testing.T) {
	cm := func(data map[string]string) *corev1.ConfigMap {
		return builders.ConfigMap("cfg", "ns", testLabels, data)
	}
	secret := func(data map[string]string) *corev1.Secret { return builders.Secret("sec", "ns", testLabels, data) }
	base := []client.Object{cm(map[string]string{"a": "1", "b": "2"}), secret(map[string]string{"p": "x"})}

	// Each case either hashes like base or not.
	cases := map[string]struct {
		objs []client.Object
		same bool
	}{
		"same content, new objects": {
			objs: []client.Object{cm(map[string]string{"b": "2", "a": "1"}), secret(map[string]string{"p": "x"})},
			same: true,
		},
		"other order": {
			objs: []client.Object{secret(map[string]string{"p": "x"}), cm(map[string]string{"a": "1", "b": "2"})},
			same: true,
		},
		"labels, annotations and server metadata ignored": {
			objs: func() []client.Object {
				c := cm(map[string]string{"a": "1", "b": "2"})
				c.Labels = map[string]string{"other": "x"}
				c.Annotations = map[string]string{"note": "y"}
				c.ResourceVersion, c.UID, c.Generation = "42", "uid-1", 3
				c.TypeMeta = metav1.TypeMeta{}
				return []client.Object{c, secret(map[string]string{"p": "x"})}
			}(),
			same: true,
		},
		"unstructured forms": {
			objs: []client.Object{toUnstructured(t, base[0]), toUnstructured(t, base[1])},
			same: true,
		},
		"secret stringData folded like the API server": {
			objs: []client.Object{cm(map[string]string{"a": "1", "b": "2"}), &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "sec", Namespace: "ns"},
				Data:       map[string][]byte{"p": []byte("old")},
				StringData: map[string]string{"p": "x"},
			}},
			same: true,
		},
		"unstructured secret with stringData": {
			objs: []client.Object{cm(map[string]string{"a": "1", "b": "2"}), &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "Secret",
				"metadata":   map[string]any{"name": "sec", "namespace": "ns"},
				"stringData": map[string]any{"p": "x"},
			}}},
			same: true,
		},
		"nil objects skipped": {
			objs: []client.Object{nil, base[0], (*corev1.Secret)(nil), base[1]},
			same: true,
		},
		"value changed": {
			objs: []client.Object{cm(map[string]string{"a": "1", "b": "3"}), secret(map[string]string{"p": "x"})},
		},
		"secret value changed": {
			objs: []client.Object{cm(map[string]string{"a": "1", "b": "2"}), secret(map[string]string{"p": "y"})},
		},
		"key renamed": {
			objs: []client.Object{cm(map[string]string{"a": "1", "c": "2"}), secret(map[string]string{"p": "x"})},
		},
		"key and value boundaries": {
			objs: []client.Object{cm(map[string]string{"a": "12", "b": ""}), secret(map[string]string{"p": "x"})},
		},
		"binary data added": {
			objs: func() []client.Object {
				c := cm(map[string]string{"a": "1", "b": "2"})
				c.BinaryData = map[string][]byte{"bin": {0, 1}}
				return []client.Object{c, secret(map[string]string{"p": "x"})}
			}(),
		},
		"object renamed": {
			objs: []client.Object{builders.ConfigMap("cfg2", "ns", testLabels, map[string]string{"a": "1", "b": "2"}), secret(map[string]string{"p": "x"})},
		},
		"object left out": {
			objs: []client.Object{base[0]},
		},
	}
	want := builders.ConfigHash(base...)
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(want) {
		t.Fatalf("ConfigHash = %q, want 64 hex digits", want)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := builders.ConfigHash(tc.objs...)
			if tc.same && got != want {
				t.Errorf("hash changed: got %s, want %s", got, want)
			}
			if !tc.same && got == want {
				t.Errorf("hash did not change: %s", got)
			}
		})
	}
}

func TestConfigHashOtherKinds(t *testing.T) {
	d := builders.Deployment("d", "ns", testLabels, builders.PodTemplate(testLabels, nil), builders.WithReplicas(1))
	withStatus := d.DeepCopy()
	withStatus.Status.Replicas = 5
	withStatus.TypeMeta = metav1.TypeMeta{}
	changed := d.DeepCopy()
	changed.Spec.Replicas = new(int32)
	if a, b := builders.ConfigHash(d), builders.ConfigHash(withStatus); a != b {
		t.Errorf("status or TypeMeta changed the hash: %s != %s", a, b)
	}
	if a, b := builders.ConfigHash(d), builders.ConfigHash(toUnstructured(t, d)); a != b {
		t.Errorf("typed and unstructured hash differently: %s != %s", a, b)
	}
	if a, b := builders.ConfigHash(d), builders.ConfigHash(changed); a == b {
		t.Errorf("spec change did not change the hash")
	}
}

func TestRolloutOnChange(t *testing.T) {
	cm := builders.ConfigMap("cfg", "ns", testLabels, map[string]string{"a": "1"})
	pod := builders.PodTemplate(testLabels, nil, builders.WithPodAnnotation("keep", "me"))
	builders.RolloutOnChange(&pod, cm)
	want := map[string]string{"keep": "me", builders.ConfigHashAnnotation: builders.ConfigHash(cm)}
	if diff := cmp.Diff(want, pod.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}

	// The option gives the same result, and a data change rolls the Deployment's template.
	build := func(data string) *appsv1.Deployment {
		cm := builders.ConfigMap("cfg", "ns", testLabels, map[string]string{"a": data})
		return builders.Deployment("d", "ns", testLabels, builders.PodTemplate(testLabels, nil,
			builders.WithPodAnnotation("keep", "me"), builders.WithRolloutOnChange(cm)))
	}
	if diff := cmp.Diff(want, build("1").Spec.Template.Annotations); diff != "" {
		t.Errorf("WithRolloutOnChange annotations (-want +got):\n%s", diff)
	}
	if cmp.Equal(build("1").Spec.Template, build("2").Spec.Template) {
		t.Error("a ConfigMap data change did not change the pod template")
	}
}
