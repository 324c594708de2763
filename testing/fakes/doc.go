// Package fakes provides test doubles with fault injection.
//
// NewClient wraps controller-runtime's fake client: the status subresource is enabled for the seeded
// types (Update leaves status alone, Status() writes only status), every call is recorded, and faults
// can be injected: conflicts on every nth or a seeded fraction of writes, an error for a verb and kind,
// latency. It is for unit tests of pure logic only; behaviour of the API server (defaulting, server-side
// apply, validation, finalizers, garbage collection) is tested against testing/harness. An apply patch
// sent through Patch (apply.Applier sends its applies so) is recorded as VerbApply and stored
// through the fake's Apply (ApplyPatch), which gives it a resourceVersion as the API server does.
//
//	c := fakes.NewClient(scheme, fakes.WithObjects(widget), fakes.WithConflictEvery(2))
//	err := c.Status().Update(ctx, widget) // every second write: a Conflict
//
// InjectFaults and Injector bring conflicts to tests against the real API server: they wrap a
// rest.Config so that a seeded fraction of write requests is answered with 409 Conflict without being
// sent, while reads and watches pass.
//
//	inj := fakes.NewInjector(fakes.WithInjectRate(0.3), fakes.WithInjectSeed(1))
//	env.StartManager(t, setup, harness.WithManagerConfig(inj.Wrap(env.Config)))
//	// ... the controller still converges; inj.Stats().Conflicts shows how often it had to retry.
package fakes
