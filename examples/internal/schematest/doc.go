// Package schematest checks an example's CRD schema against a real API server: that invalid objects are
// rejected with the message of the rule (OpenAPI or CEL) they break, and that valid ones are stored with
// their defaults. Objects are created with strict field validation, so unknown fields are rejected too.
//
//	var set, remove = schematest.Set, schematest.Remove
//
//	schematest.ExpectRejected(t, env.Client, ns, validMemcached, map[string]schematest.Rejection{
//		"size missing": {Mutate: []schematest.Mutation{remove("spec.size")}, Want: `spec.size: Required value`},
//		"size zero":    {Mutate: []schematest.Mutation{set("spec.size", int64(0))}, Want: `should be greater than or equal to 1`},
//	})
//
//	got := schematest.CreateAndGet(t, env.Client, &v1alpha1.Memcached{ /* ... */ })
package schematest
