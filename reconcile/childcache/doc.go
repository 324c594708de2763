// Package childcache shapes the manager's cache for a Convergo operator through controller-runtime's
// public cache options alone: no managedFields on any cached object, and of the child kinds only the
// operator's own children (an API-server label filter on the tracking label every child carries).
//
//	opts := ctrl.Options{Scheme: scheme}
//	childcache.Configure(&opts.Cache, &appsv1.Deployment{}, &corev1.Service{})
//	mgr, err := ctrl.NewManager(cfg, opts)
//	r := reconcile.NewReconciler(mgr, hooks, reconcile.WithOwns(childcache.Kinds(opts.Cache)...))
//
// Kinds reads the child kinds back from the options, so they are declared once.
package childcache
