// Package reconcile applies an operator's owned children with zero spurious writes, orders them in
// a dependency graph, and composes everything into a generic reconciler.
//
// Apply takes the child as a typed object holding only what the operator cares about. It reads the
// live object from the cache, compares only the fields the desired object sets (numbers by value,
// quantities in the form the API server stores, each list by its merge semantics from the kind's
// schema) plus a hash of that intent, and sends a server-side apply only when they differ. Defaulted
// fields never cause a write, a field dropped from the desired object is removed from the live one, an
// entry someone adds to an atomic list (a ClusterRole's rules) is reverted, and a child of another
// owner is never taken over, whatever the cache shows: creates and updates are guarded on the API
// server, and absence is confirmed there (see Applier.Apply and Graph.Delete).
//
//	a := reconcile.NewApplier(mgr.GetClient(), mgr.GetScheme(), reconcile.WithFieldManager("memcached"))
//	_, op, err := a.Apply(ctx, memcached, &appsv1.Deployment{
//		ObjectMeta: metav1.ObjectMeta{Name: memcached.Name},
//		Spec:       appsv1.DeploymentSpec{ /* only what you mean */ },
//	})
//
// The manager's cache options decide what the cache holds of the children. LeanCache drops
// managedFields and every object of the child kinds that is not a Convergo child, and shares the
// strings objects repeat; SlimCache keeps, of each child, only its metadata, status and scalars, plus a
// digest of what each field manager applied (from managedFields, or from the label LabelAppliedIntent,
// an annotation on a Service, that every apply sets, while nobody took a field of it), which Apply
// compares with its intent hash instead of the fields:
//
//	opts := ctrl.Options{Scheme: scheme, NewCache: reconcile.NewCache}
//	reconcile.SlimCache(&opts.Cache, &appsv1.Deployment{}, &corev1.ConfigMap{})
//
// (NewCache makes the manager start its controllers as soon as the informers created during setup
// have synced, and starts the informers of each Reconciler's kinds with it, listing together, without
// gzip; the Reconciler's own watches wait that way with any cache.)
//
// A Graph declares named children with dependencies and readiness checks:
//
//	g := reconcile.NewGraph()
//	g.Add("config", configMap)
//	g.Add("deployment", deployment).DependsOn("config").ReadyWhen(builders.DeploymentAvailable)
//	g.Add("service", service) // needs nothing to exist first: applied at once, beside the config
//	res, err := g.Apply(ctx, a, owner)        // in order; waits for readiness
//	pruned, err := a.Prune(ctx, owner, g, &corev1.Service{}, &corev1.ConfigMap{}, &appsv1.Deployment{})
//	del, err := g.Delete(ctx, a, owner)       // reverse order, on deletion, until del.Done
//
// Graph.Apply records on each child its node and dependencies (AnnotationNode, AnnotationDependsOn),
// so that `kubectl convergo tree` (reconcile/cmd/kubectl-convergo) can show a live object's children
// in graph order.
//
// Each child chooses how it goes when its owner is deleted or the graph stops declaring it. A kept
// child (data that must outlive the owner) is released instead of deleted: nothing of the owner is
// left on it, and it has no owner reference even while owned, so the garbage collector never deletes
// it. A foreground child is gone only after its own dependents (a Deployment's ReplicaSets and Pods),
// so what it depends on goes after them. The choice is recorded on the child as
// DeletionPolicyAnnotation, which pruning reads from the live child:
//
//	g.Add("data", pvc).KeepOnDelete()
//	g.Add("web", deployment).DependsOn("data").DeletionPropagation(metav1.DeletePropagationForeground)
//
// The Reconciler composes all of it for an API type T whose status has conditions: on every
// request it ensures a finalizer, builds the Graph from T's spec, applies it, prunes what is no
// longer declared, sets Ready / Reconciling / Stalled and patches the status only when it changed;
// on deletion it deletes the children in reverse order, runs an optional cleanup hook and only
// then removes the finalizer. A converged object costs no API request.
//
//	children := func(ctx context.Context, mc *v1alpha1.Memcached) (*reconcile.Graph, error) {
//		if mc.Spec.Size > 10 {
//			return nil, reconcile.Invalid("size %d is more than 10", mc.Spec.Size) // Stalled, not retried
//		}
//		g := reconcile.NewGraph()
//		g.Add("deployment", deployment(mc)).ReadyWhen(builders.DeploymentAvailable)
//		g.Add("service", service(mc)) // a Service needs no running pods: no DependsOn
//		return g, nil
//	}
//	r := reconcile.NewReconciler(mgr, reconcile.Hooks[*v1alpha1.Memcached]{Children: children},
//		reconcile.WithOwns(&appsv1.Deployment{}, &corev1.Service{}))
//	err := r.SetupWithManager(mgr)
//
// Child watches are quiet: a child's creation or deletion always wakes its owner, an update only when
// it may matter to the owner. That is a change of anything the owner may have applied (anything but
// the status, resourceVersion and managedFields: the spec, the generation, labels, annotations, owner
// references, finalizers, the deletion timestamp, a ConfigMap's data), or a status change after which
// the child's ReadyWhen check, as the owner's last reconcile used it, gives another verdict (ready,
// reason) than that reconcile saw. A Deployment's many status updates during a rollout therefore wake
// its owner only when the rollout's progress as DeploymentAvailable reports it moves, and the event of
// the owner's own write to a child (the very version it judged) wakes nothing. A child the owner has
// not judged yet (after a restart, say) wakes it on any update; an update that comes while the owner
// is being reconciled is decided once that reconcile has remembered what it judged; a node without
// ReadyWhen is ready once it exists, so its status never wakes the owner. A Status hook that copies
// child status fields ReadyWhen does not read (a Deployment's readyReplicas) sees them as of the last
// wake-up; WithEveryChildChange wakes the owner on every child update instead.
package reconcile
