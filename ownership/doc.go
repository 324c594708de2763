// Package ownership decides who owns a child object and records it: controller owner references
// with errors that say what to do when Kubernetes cannot express the ownership, and tracking labels
// for the children the garbage collector cannot own (cluster-scoped children of namespaced owners,
// children in other namespaces). It never talks to the API server.
//
// Typical use (apply.Applier does this for every child):
//
//	if err := ownership.SetController(app, deployment, scheme); err != nil {
//		var owned *ownership.AlreadyOwnedError
//		if errors.As(err, &owned) {
//			// someone else controls the Deployment: report it, do not steal it
//		}
//		return err
//	}
//	// a ClusterRole cannot be owned by a namespaced App: track it instead, delete it in a finalizer
//	if err := ownership.Track(app, clusterRole, scheme); err != nil {
//		return err
//	}
//	// and map its events back to the App:
//	//	bldr.Watches(&rbacv1.ClusterRole{}, ownership.EnqueueTrackedOwner(&v1.App{}, scheme))
package ownership
