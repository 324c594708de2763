//go:build integration

package v1alpha1_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/testing/harness"
	"github.com/convergo-dev/convergo/testing/schematest"
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

// set and remove are the mutations the cases use, short for the table's sake.
var set, remove = schematest.Set, schematest.Remove

// TestInvalidSpecsAreRejected sends invalid Welcomes to the real API server and checks that each is
// rejected with the message of the schema rule (OpenAPI or CEL) it breaks.
func TestInvalidSpecsAreRejected(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	type mutations = []schematest.Mutation
	cases := map[string]schematest.Rejection{
		"name missing": {
			Mutate: mutations{remove("spec.name")},
			Want:   `spec.name: Required value`,
		},
		"name empty": {
			Mutate: mutations{set("spec.name", "")},
			Want:   `spec.name in body should be at least 1 chars long`,
		},
		"name longer than 64 characters": {
			Mutate: mutations{set("spec.name", strings.Repeat("a", 65))},
			Want:   `spec.name: Too long: may not be more than 64 bytes`,
		},
		"name with leading space": {
			Mutate: mutations{set("spec.name", " Alice")},
			Want:   `spec.name in body should match '^\S(.*\S)?$'`,
		},
		"image empty": {
			Mutate: mutations{set("spec.image", "")},
			Want:   `spec.image in body should be at least 1 chars long`,
		},
		"negative replicas": {
			Mutate: mutations{set("spec.replicas", int64(-1))},
			Want:   `spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0`,
		},
		"too many replicas": {
			Mutate: mutations{set("spec.replicas", int64(11))},
			Want:   `spec.replicas in body should be less than or equal to 10`,
		},
		"port zero": {
			Mutate: mutations{set("spec.port", int64(0))},
			Want:   `spec.port in body should be greater than or equal to 1`,
		},
		"port above 65535": {
			Mutate: mutations{set("spec.port", int64(70000))},
			Want:   `spec.port in body should be less than or equal to 65535`,
		},
		"port as a string": {
			Mutate: mutations{set("spec.port", "8088")},
			Want:   `spec.port in body must be of type integer: "string"`,
		},
		"LoadBalancer service type": {
			Mutate: mutations{set("spec.serviceType", "LoadBalancer")},
			Want:   `spec.serviceType: Unsupported value: "LoadBalancer": supported values: "ClusterIP", "NodePort"`,
		},
		"nodePort with the default ClusterIP service (CEL)": {
			Mutate: mutations{set("spec.nodePort", int64(30080))},
			Want:   `spec: Invalid value: nodePort can only be set when serviceType is NodePort`,
		},
		"nodePort with an explicit ClusterIP service (CEL)": {
			Mutate: mutations{set("spec.serviceType", "ClusterIP"), set("spec.nodePort", int64(30080))},
			Want:   `nodePort can only be set when serviceType is NodePort`,
		},
		"nodePort below the node port range": {
			Mutate: mutations{set("spec.serviceType", "NodePort"), set("spec.nodePort", int64(8080))},
			Want:   `spec.nodePort in body should be greater than or equal to 30000`,
		},
		"nodePort above the node port range": {
			Mutate: mutations{set("spec.serviceType", "NodePort"), set("spec.nodePort", int64(32768))},
			Want:   `spec.nodePort in body should be less than or equal to 32767`,
		},
		"root user ID": {
			Mutate: mutations{set("spec.userID", int64(0))},
			Want:   `spec.userID in body should be greater than or equal to 1`,
		},
		"user ID above 65535": {
			Mutate: mutations{set("spec.userID", int64(65536))},
			Want:   `spec.userID in body should be less than or equal to 65535`,
		},
		"duplicate group": {
			Mutate: mutations{set("spec.groups", []any{"admins", "admins"})},
			Want:   `spec.groups[1]: Duplicate value: "admins"`,
		},
		"empty group name": {
			Mutate: mutations{set("spec.groups", []any{""})},
			Want:   `spec.groups[0] in body should be at least 1 chars long`,
		},
		"group name with upper case": {
			Mutate: mutations{set("spec.groups", []any{"Admins"})},
			Want:   `spec.groups[0] in body should match '^[a-z_][a-z0-9_-]*$'`,
		},
		"more than 16 groups": {
			Mutate: mutations{set("spec.groups", func() []any {
				var g []any
				for i := range 17 {
					g = append(g, "g"+strings.Repeat("x", i))
				}
				return g
			}())},
			Want: `spec.groups: Too many: 17: must have at most 16 items`,
		},
		"email without a domain": {
			Mutate: mutations{set("spec.email", "alice")},
			Want:   `spec.email in body must be of type email: "alice"`,
		},
		"passwordSecretRef without key": {
			Mutate: mutations{remove("spec.passwordSecretRef.key")},
			Want:   `spec.passwordSecretRef.key: Required value`,
		},
		"passwordSecretRef without name": {
			Mutate: mutations{remove("spec.passwordSecretRef.name")},
			Want:   `spec.passwordSecretRef.name: Required value`,
		},
		"passwordSecretRef with an invalid Secret name": {
			Mutate: mutations{set("spec.passwordSecretRef.name", "Alice_Password")},
			Want:   `spec.passwordSecretRef.name in body should match`,
		},
		"passwordSecretRef with an invalid key": {
			Mutate: mutations{set("spec.passwordSecretRef.key", "pass word")},
			Want:   `spec.passwordSecretRef.key in body should match '^[-._a-zA-Z0-9]+$'`,
		},
		"passwordSecretRef key '.'": {
			Mutate: mutations{set("spec.passwordSecretRef.key", ".")},
			Want:   `key must not be '.' or start with '..'`,
		},
		"passwordSecretRef key '..'": {
			Mutate: mutations{set("spec.passwordSecretRef.key", "..")},
			Want:   `key must not be '.' or start with '..'`,
		},
		"passwordSecretRef key starting with '..'": {
			Mutate: mutations{set("spec.passwordSecretRef.key", "..data")},
			Want:   `key must not be '.' or start with '..'`,
		},
		"plaintext password (strict field validation)": {
			Mutate: mutations{set("spec.password", "hunter2")},
			Want:   `unknown field "spec.password"`,
		},
		"name that is not a DNS-1035 label (CEL)": {
			Mutate: mutations{set("metadata.name", "alice.example")},
			Want:   `metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter): it names the Service`,
		},
		"name longer than 63 characters (CEL)": {
			Mutate: mutations{set("metadata.name", "w"+strings.Repeat("a", 63))},
			Want:   `metadata.name must be at most 63 characters: it names the Service`,
		},
	}
	schematest.ExpectRejected(t, env.Client, ns, validWelcome, cases)
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
			got := schematest.CreateAndGet(t, env.Client, &v1alpha1.Welcome{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "valid-"},
				Spec:       tc.spec,
			})
			if diff := cmp.Diff(tc.want, got.Spec); diff != "" {
				t.Errorf("stored spec (-want +got):\n%s", diff)
			}
		})
	}
}
