package schematest

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/testing/harness"
)

// Mutation changes the unstructured content of an object.
type Mutation func(obj map[string]any)

// Set returns a mutation that sets the value at the dot-separated path, creating the maps on the way.
// It panics when a map on the way is something else: the case itself is wrong.
func Set(path string, value any) Mutation {
	return func(obj map[string]any) {
		if err := unstructured.SetNestedField(obj, value, strings.Split(path, ".")...); err != nil {
			panic(err)
		}
	}
}

// Remove returns a mutation that removes the field at the dot-separated path.
func Remove(path string) Mutation {
	return func(obj map[string]any) { unstructured.RemoveNestedField(obj, strings.Split(path, ".")...) }
}

// Rejection is a case of ExpectRejected: the mutations that make a valid object invalid, and a part of
// the error the API server must answer with.
type Rejection struct {
	// Mutate are applied in order to the valid object's content.
	Mutate []Mutation
	// Want is a part of the API server's error message, such as the message of the broken CEL rule.
	Want string
}

// ExpectRejected runs a subtest per case: it creates in namespace ns, with strict field validation, the
// object valid returns (its unstructured content) changed by the case's mutations, and checks that the
// API server rejects it with an error that contains the case's Want.
func ExpectRejected(t *testing.T, c client.Client, ns string, valid func() map[string]any, cases map[string]Rejection) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := valid()
			for _, m := range tc.Mutate {
				m(obj)
			}
			u := &unstructured.Unstructured{Object: obj}
			u.SetNamespace(ns)
			err := c.Create(t.Context(), u, client.FieldValidation(metav1.FieldValidationStrict))
			if err == nil {
				t.Fatalf("the API server accepted the %s; want a rejection containing %q:\n%s", u.GetKind(), tc.Want, harness.ObjectYAML(u))
			}
			if !strings.Contains(err.Error(), tc.Want) {
				t.Errorf("rejection does not contain the schema's message\n got: %v\nwant: %s", err, tc.Want)
			}
		})
	}
}

// CreateAndGet creates obj with strict field validation and returns the object the API server stored,
// read back in a new value (defaults included).
func CreateAndGet[E any, T interface {
	*E
	client.Object
}](t testing.TB, c client.Client, obj T) T {
	t.Helper()
	if err := c.Create(t.Context(), obj, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
		t.Fatalf("create %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
	}
	got := T(new(E))
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatalf("get %s: %v", client.ObjectKeyFromObject(obj), err)
	}
	return got
}
