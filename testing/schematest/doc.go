// Package schematest checks a CustomResourceDefinition's schema against a real API server (one started
// by testing/harness): that invalid objects are rejected with the message of the rule (OpenAPI or CEL)
// they break, and that valid ones are stored with their defaults. Objects are created with strict field
// validation, so unknown fields are rejected too. It needs nothing of the operator but its CRD and Go
// types; use it in the test package of the API types.
//
//	func validMemcached() map[string]any {
//		return map[string]any{
//			"apiVersion": v1alpha1.GroupVersion.String(), "kind": "Memcached",
//			"metadata": map[string]any{"name": "cache"}, "spec": map[string]any{"size": int64(3)},
//		}
//	}
//
//	var set, remove = schematest.Set, schematest.Remove
//
//	func TestInvalidSpecsAreRejected(t *testing.T) {
//		env := harness.Default()
//		schematest.ExpectRejected(t, env.Client, env.Namespace(t), validMemcached, map[string]schematest.Rejection{
//			"size missing": {Mutate: []schematest.Mutation{remove("spec.size")}, Want: `spec.size: Required value`},
//			"size zero":    {Mutate: []schematest.Mutation{set("spec.size", int64(0))}, Want: `should be greater than or equal to 1`},
//		})
//	}
//
//	got := schematest.CreateAndGet(t, env.Client, &v1alpha1.Memcached{ /* ... */ })
//	// got.Spec holds the defaults the API server applied.
package schematest
