// Package controller is the Memcached operator's reconciler, built on Convergo.
//
// The whole operator is three functions handed to reconcile.NewReconciler: Children says what a
// Memcached is made of (a Deployment of memcached pods, then a Service in front of it), status turns
// what was observed into status.readyReplicas and status.nodes, and SetupWithManager wires both into a
// manager with a finalizer, so that deletion removes the Service before the Deployment. Applying only
// on drift, ordering, pruning, conditions (Ready, Reconciling, Stalled), events and status patches
// come from the library.
//
//	mgr, _ := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme})
//	if err := controller.SetupWithManager(mgr); err != nil {
//		return err
//	}
//	return mgr.Start(ctx)
package controller
