// Package jaeger starts a private Jaeger trace backend for tests and demos, the way the rest of
// convergo/testing starts kube-apiserver and PostgreSQL: the jaeger program (Jaeger v2, built from
// the Go module proxy and cached by testing/assets) on 127.0.0.1 and free ports, keeping traces in
// memory, stopped when the test ends. It receives OTLP over HTTP, and Traces reads them back through
// Jaeger's query API, so a test can check the shape of what an operator traced.
//
//	func TestTraced(t *testing.T) {
//		j := jaeger.Start(t)
//		tp := j.TracerProvider(t, "my-operator") // exports to j
//		r := reconcile.NewReconciler(mgr, hooks, reconcile.WithTracerProvider(tp))
//		...
//		_ = tp.ForceFlush(t.Context()) // send what the batcher holds
//		traces, err := j.Traces(t.Context(), "my-operator")
//		for _, tr := range traces {
//			t.Log(tr.Tree()) // the span tree, one span per line, children under their parent
//		}
//	}
//
// Programs that are not tests (the demo) start one with New and stop it with Close, and build their
// exporter on OTLPEndpoint.
//
// Jaeger's query API answers at QueryURL (/api/services, /api/traces?service=NAME). The binary built
// from the module has no UI assets (they are built with npm, not Go), so QueryURL serves a
// placeholder page, not the Jaeger UI.
package jaeger
