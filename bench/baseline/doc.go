// Package baseline is a Welcome operator written the way controller-runtime tutorials write
// operators. It is the yardstick of `make bench`, not an example to follow.
//
// For every Welcome it calls controllerutil.CreateOrUpdate for the page ConfigMap, the Deployment and
// the Service, each with a mutate function that sets the whole spec and a controller reference
// (SetControllerReference); it then computes the status, sets a Ready condition with
// meta.SetStatusCondition and writes the status with Status().Update on every pass; after creating a
// child it asks to be requeued (Requeue: true). The children carry the same content and labels as
// those of Convergo's Welcome operator (examples/welcome), so both can be compared on the same cluster.
//
// Register it with a manager whose scheme holds the client-go and Welcome types:
//
//	r := &baseline.Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}
//	if err := r.SetupWithManager(mgr); err != nil {
//		return err
//	}
package baseline
