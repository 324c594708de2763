package v1alpha1_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/testing/harness"
)

// validWelcome returns the unstructured content of a valid Welcome that cases modify.
func validWelcome() map[string]any {
	return map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "Welcome",
		"metadata":   map[string]any{"name": "alice"},
		"spec": map[string]any{
			"name":              "Alice",
			"passwordSecretRef": map[string]any{"name": "alice-password", "key": "password"},
		},
	}
}

// set returns a mutation that sets the value at the dot-separated path.
func set(path string, value any) func(map[string]any) {
	return func(obj map[string]any) {
		if err := unstructured.SetNestedField(obj, value, strings.Split(path, ".")...); err != nil {
			panic(err)
		}
	}
}

// remove returns a mutation that removes the field at the dot-separated path.
func remove(path string) func(map[string]any) {
	return func(obj map[string]any) { unstructured.RemoveNestedField(obj, strings.Split(path, ".")...) }
}

// TestInvalidSpecsAreRejected sends invalid Welcomes to the real API server and checks that each is
// rejected with the message of the schema rule (OpenAPI or CEL) it breaks.
func TestInvalidSpecsAreRejected(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	type mutations = []func(map[string]any)
	cases := map[string]struct {
		mutate mutations
		want   string
	}{
		"name missing": {
			mutate: mutations{remove("spec.name")},
			want:   `spec.name: Required value`,
		},
		"name empty": {
			mutate: mutations{set("spec.name", "")},
			want:   `spec.name in body should be at least 1 chars long`,
		},
		"name longer than 64 characters": {
			mutate: mutations{set("spec.name", strings.Repeat("a", 65))},
			want:   `spec.name: Too long: may not be more than 64 bytes`,
		},
		"name with leading space": {
			mutate: mutations{set("spec.name", " Alice")},
			want:   `spec.name in body should match '^\S(.*\S)?$'`,
		},
		"image empty": {
			mutate: mutations{set("spec.image", "")},
			want:   `spec.image in body should be at least 1 chars long`,
		},
		"negative replicas": {
			mutate: mutations{set("spec.replicas", int64(-1))},
			want:   `spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0`,
		},
		"too many replicas": {
			mutate: mutations{set("spec.replicas", int64(11))},
			want:   `spec.replicas in body should be less than or equal to 10`,
		},
		"port zero": {
			mutate: mutations{set("spec.port", int64(0))},
			want:   `spec.port in body should be greater than or equal to 1`,
		},
		"port above 65535": {
			mutate: mutations{set("spec.port", int64(70000))},
			want:   `spec.port in body should be less than or equal to 65535`,
		},
		"port as a string": {
			mutate: mutations{set("spec.port", "8088")},
			want:   `spec.port in body must be of type integer: "string"`,
		},
		"LoadBalancer service type": {
			mutate: mutations{set("spec.serviceType", "LoadBalancer")},
			want:   `spec.serviceType: Unsupported value: "LoadBalancer": supported values: "ClusterIP", "NodePort"`,
		},
		"nodePort with the default ClusterIP service (CEL)": {
			mutate: mutations{set("spec.nodePort", int64(30080))},
			want:   `spec: Invalid value: nodePort can only be set when serviceType is NodePort`,
		},
		"nodePort with an explicit ClusterIP service (CEL)": {
			mutate: mutations{set("spec.serviceType", "ClusterIP"), set("spec.nodePort", int64(30080))},
			want:   `nodePort can only be set when serviceType is NodePort`,
		},
		"nodePort below the node port range": {
			mutate: mutations{set("spec.serviceType", "NodePort"), set("spec.nodePort", int64(8080))},
			want:   `spec.nodePort in body should be greater than or equal to 30000`,
		},
		"nodePort above the node port range": {
			mutate: mutations{set("spec.serviceType", "NodePort"), set("spec.nodePort", int64(32768))},
			want:   `spec.nodePort in body should be less than or equal to 32767`,
		},
		"root user ID": {
			mutate: mutations{set("spec.userID", int64(0))},
			want:   `spec.userID in body should be greater than or equal to 1`,
		},
		"user ID above 65535": {
			mutate: mutations{set("spec.userID", int64(65536))},
			want:   `spec.userID in body should be less than or equal to 65535`,
		},
		"duplicate group": {
			mutate: mutations{set("spec.groups", []any{"admins", "admins"})},
			want:   `spec.groups[1]: Duplicate value: "admins"`,
		},
		"empty group name": {
			mutate: mutations{set("spec.groups", []any{""})},
			want:   `spec.groups[0] in body should be at least 1 chars long`,
		},
		"group name with upper case": {
			mutate: mutations{set("spec.groups", []any{"Admins"})},
			want:   `spec.groups[0] in body should match '^[a-z_][a-z0-9_-]*$'`,
		},
		"more than 16 groups": {
			mutate: mutations{set("spec.groups", func() []any {
				var g []any
				for i := range 17 {
					g = append(g, "g"+strings.Repeat("x", i))
				}
				return g
			}())},
			want: `spec.groups: Too many: 17: must have at most 16 items`,
		},
		"email without a domain": {
			mutate: mutations{set("spec.email", "alice")},
			want:   `spec.email in body must be of type email: "alice"`,
		},
		"passwordSecretRef without key": {
			mutate: mutations{remove("spec.passwordSecretRef.key")},
			want:   `spec.passwordSecretRef.key: Required value`,
		},
		"passwordSecretRef without name": {
			mutate: mutations{remove("spec.passwordSecretRef.name")},
			want:   `spec.passwordSecretRef.name: Required value`,
		},
		"passwordSecretRef with an invalid Secret name": {
			mutate: mutations{set("spec.passwordSecretRef.name", "Alice_Password")},
			want:   `spec.passwordSecretRef.name in body should match`,
		},
		"passwordSecretRef with an invalid key": {
			mutate: mutations{set("spec.passwordSecretRef.key", "pass word")},
			want:   `spec.passwordSecretRef.key in body should match '^[-._a-zA-Z0-9]+$'`,
		},
		"passwordSecretRef key '.'": {
			mutate: mutations{set("spec.passwordSecretRef.key", ".")},
			want:   `key must not be '.' or start with '..'`,
		},
		"passwordSecretRef key '..'": {
			mutate: mutations{set("spec.passwordSecretRef.key", "..")},
			want:   `key must not be '.' or start with '..'`,
		},
		"passwordSecretRef key starting with '..'": {
			mutate: mutations{set("spec.passwordSecretRef.key", "..data")},
			want:   `key must not be '.' or start with '..'`,
		},
		"plaintext password (strict field validation)": {
			mutate: mutations{set("spec.password", "hunter2")},
			want:   `unknown field "spec.password"`,
		},
		"name that is not a DNS-1035 label (CEL)": {
			mutate: mutations{set("metadata.name", "alice.example")},
			want:   `metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter): it names the Service`,
		},
		"name longer than 63 characters (CEL)": {
			mutate: mutations{set("metadata.name", "w"+strings.Repeat("a", 63))},
			want:   `metadata.name must be at most 63 characters: it names the Service`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := validWelcome()
			for _, m := range tc.mutate {
				m(obj)
			}
			u := &unstructured.Unstructured{Object: obj}
			u.SetNamespace(ns)
			err := env.Client.Create(t.Context(), u, client.FieldValidation(metav1.FieldValidationStrict))
			if err == nil {
				t.Fatalf("the API server accepted the Welcome; want a rejection containing %q:\n%s", tc.want, harness.ObjectYAML(u))
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("rejection does not contain the schema's message\n got: %v\nwant: %s", err, tc.want)
			}
		})
	}
}

// TestValidSpecsAreAcceptedWithDefaults creates valid Welcomes, including boundary values, and checks the
// spec the API server stores, defaults included.
func TestValidSpecsAreAcceptedWithDefaults(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	cases := map[string]struct {
		spec v1alpha1.WelcomeSpec
		want v1alpha1.WelcomeSpec
	}{
		"defaults": {
			spec: v1alpha1.WelcomeSpec{Name: "Alice"},
			want: v1alpha1.WelcomeSpec{
				Name: "Alice", Image: v1alpha1.DefaultImage, Replicas: ptr.To[int32](1), Port: 8088,
				ServiceType: corev1.ServiceTypeClusterIP,
			},
		},
		"zero replicas are kept": {
			spec: v1alpha1.WelcomeSpec{Name: "Alice", Replicas: ptr.To[int32](0)},
			want: v1alpha1.WelcomeSpec{
				Name: "Alice", Image: v1alpha1.DefaultImage, Replicas: ptr.To[int32](0), Port: 8088,
				ServiceType: corev1.ServiceTypeClusterIP,
			},
		},
		"everything set at the limits": {
			spec: v1alpha1.WelcomeSpec{
				Name: "Zoë van der Berg", Image: "example.com/welcome:1", Replicas: ptr.To[int32](10), Port: 65535,
				ServiceType: corev1.ServiceTypeNodePort, NodePort: ptr.To[int32](32767), UserID: ptr.To[int64](65535),
				Groups: []string{"admins", "_dev-ops"}, Email: "zoe@example.com",
				PasswordSecretRef: &v1alpha1.SecretKeyRef{Name: "zoe.password", Key: "pass_word-1.txt"},
			},
			want: v1alpha1.WelcomeSpec{
				Name: "Zoë van der Berg", Image: "example.com/welcome:1", Replicas: ptr.To[int32](10), Port: 65535,
				ServiceType: corev1.ServiceTypeNodePort, NodePort: ptr.To[int32](32767), UserID: ptr.To[int64](65535),
				Groups: []string{"admins", "_dev-ops"}, Email: "zoe@example.com",
				PasswordSecretRef: &v1alpha1.SecretKeyRef{Name: "zoe.password", Key: "pass_word-1.txt"},
			},
		},
		"node port chosen by the cluster, smallest values": {
			spec: v1alpha1.WelcomeSpec{Name: "A", Port: 1, ServiceType: corev1.ServiceTypeNodePort, UserID: ptr.To[int64](1)},
			want: v1alpha1.WelcomeSpec{
				Name: "A", Image: v1alpha1.DefaultImage, Replicas: ptr.To[int32](1), Port: 1,
				ServiceType: corev1.ServiceTypeNodePort, UserID: ptr.To[int64](1),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &v1alpha1.Welcome{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "valid-"},
				Spec:       tc.spec,
			}
			if err := env.Client.Create(t.Context(), w, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
				t.Fatalf("create: %v", err)
			}
			var got v1alpha1.Welcome
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(w), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Spec); diff != "" {
				t.Errorf("stored spec (-want +got):\n%s", diff)
			}
		})
	}
}
