// Package reconcile composes Convergo's pieces into a generic controller-runtime reconciler for an API
// type T whose status has conditions. On every request it ensures a finalizer, builds T's children
// graph (package graph) from the spec, applies it in dependency order (package apply: zero spurious
// writes, never steal), prunes what is no longer declared, sets Ready / Reconciling / Stalled and patches
// the status only when it changed. On deletion it deletes the children in reverse dependency order,
// runs an optional cleanup hook and only then removes the finalizer. A converged object costs no API
// request.
//
//	children := func(ctx context.Context, mc *v1alpha1.Memcached) (*graph.Graph, error) {
//		if mc.Spec.Size > 10 {
//			return nil, reconcile.Invalid("size %d is more than 10", mc.Spec.Size) // Stalled, not retried
//		}
//		g := graph.New()
//		g.Add("deployment", deployment(mc)).ReadyWhen(builders.DeploymentAvailable)
//		g.Add("service", service(mc)).DependsOn("deployment")
//		return g, nil
//	}
//	r := reconcile.NewReconciler(mgr, reconcile.Hooks[*v1alpha1.Memcached]{Children: children},
//		reconcile.WithOwns(&appsv1.Deployment{}, &corev1.Service{}))
//	err := r.SetupWithManager(mgr)
//
// Child watches are quiet: a child's creation or deletion always wakes its owner, an update only when
// something the owner applied may have changed (anything but the status, resourceVersion and
// managedFields) or when the child's ReadyWhen check, as the owner's last reconcile used it, gives
// another verdict; the answer to the owner's own write wakes nothing. WithEveryChildChange wakes the
// owner on every child update instead.
//
// Suspension (Hooks.Suspended, or the annotation SuspendAnnotation) leaves the children exactly as they
// are; sharding (WithSharding, package sharding) makes several replicas active, each on its share.
//
// A Reconciler runs 4 workers and 20 more places for objects being deleted unless told otherwise
// (MaxConcurrentReconciles in WithControllerOptions, WithDeletionConcurrency). Every reconcile is an OpenTelemetry span, with
// why it ran (its trigger) and what each graph node did; tracing is off until the program sets a
// tracer provider (WithTracerProvider, or OpenTelemetry's global one).
package reconcile
