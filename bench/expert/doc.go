// Package expert is a Welcome operator written by hand the way the best engineers write
// controller-runtime code today. It is the yardstick of `make bench` that Convergo's Welcome operator
// (examples/welcome) is measured against; the tutorial-style package baseline is the other peer.
//
// It makes the same children as package baseline (the page ConfigMap, a Deployment and a Service) with
// the same content and labels, and writes the same status. What sets it apart:
//
//   - children are written with controllerutil.CreateOrPatch, whose mutate functions set only the
//     fields the operator owns, in place: the Deployment's selector only when creating it (it is
//     immutable), its container, ports, environment variables, volume and probes found by name and
//     their fields set one by one. Whatever the API server defaulted, or someone else added, is kept,
//     so an unchanged child costs no request at all and a changed one a merge patch of what changed;
//   - the status is computed from the children, its Ready condition set with meta.SetStatusCondition
//     (so lastTransitionTime only moves when the status does), and merge-patched only when it differs
//     (equality.Semantic.DeepEqual) from what was read;
//   - Ready=True means the Deployment's rollout is complete for its current generation, as
//     `kubectl rollout status` judges it;
//   - Welcome updates wake it only when the generation changes (its own status patches do not);
//     changes to the children wake it through their controller references (Owns): it never asks to
//     be requeued after creating one;
//   - the children carry a controller reference and the garbage collector deletes them: no
//     finalizer, no events;
//   - DefaultMaxConcurrentReconciles (4) workers, and a cache without managedFields (CacheOptions).
//
// With Reconciler.ServerSideApply it decides when to write in the same way but writes each such child
// with a forced server-side apply of the whole child it owns: the bench's expert-apply, which prices
// that write form against the expert's.
//
// Register it with a manager whose scheme holds the client-go and Welcome types:
//
//	opts := ctrl.Options{Scheme: scheme}
//	expert.CacheOptions(&opts.Cache)
//	mgr, err := ctrl.NewManager(cfg, opts)
//	if err != nil {
//		return err
//	}
//	r := &expert.Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}
//	if err := r.SetupWithManager(mgr); err != nil {
//		return err
//	}
package expert
