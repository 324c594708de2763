// Package apply makes one owned child hold its intent with zero spurious writes, and deletes it
// exactly.
//
// Apply takes the child as a typed object holding only what the operator cares about. It reads the
// live object from the cache, compares only the fields the desired object sets (numbers by value,
// quantities in the form the API server stores, each list by its merge semantics from the kind's
// schema) plus a hash of the intent's shape, and sends a server-side apply only when they differ.
// Defaulted fields never cause a write, a field dropped from the desired object is removed from the
// live one, an entry someone adds to an atomic list (a ClusterRole's rules) is reverted, and a child of
// another owner is never taken over, whatever the cache shows: creates and updates are guarded on the
// API server, and absence is confirmed there or in the Applier's record of its own writes.
//
//	a := apply.NewApplier(mgr.GetClient(), mgr.GetAPIReader(), apply.WithFieldManager("memcached"))
//	_, op, err := a.Apply(ctx, memcached, &appsv1.Deployment{
//		ObjectMeta: metav1.ObjectMeta{Name: memcached.Name},
//		Spec:       appsv1.DeploymentSpec{ /* only what you mean */ },
//	})
//
// Delete and Prune remove children with a UID precondition, each as its
// DeletionPolicyAnnotation says: background or foreground propagation, or, for a kept child, a release
// that leaves nothing of the owner on it. Package graph orders them; package reconcile composes both.
package apply
