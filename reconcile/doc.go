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
// Suspension (Hooks.Suspended, or the annotation convergo.dev/suspend) leaves the children exactly as
// they are; sharding (WithSharding, package sharding) makes several replicas active, each on its share.
//
// A Reconciler runs 4 workers and 20 more places for objects being deleted unless told otherwise
// (MaxConcurrentReconciles in WithControllerOptions, WithDeletionConcurrency); the time a reconcile
// waits for a place is in convergo_reconcile_wait_seconds, and in controller-runtime's reconcile time.
// Every reconcile is an
// OpenTelemetry span, with why it ran (its trigger) and what each graph node did; tracing is off until
// the program sets a tracer provider (WithTracerProvider, or OpenTelemetry's global one).
//
// # Suspension
//
// The annotation convergo.dev/suspend suspends the reconciliation of one object when set to "true" on it (kubectl
// annotate welcome alice convergo.dev/suspend=true); removing it, or any other value, resumes. An
// operator whose API has a field for it (Flux's spec.suspend) reports it with Hooks.Suspended instead.
//
// While suspended, the object's children are left exactly as they are: nothing is applied, pruned or
// reverted, and no request is sent but the one status write that says so, without an event. The status
// reads right in kstatus-based tools (kubectl wait, Flux and Argo CD health checks):
//
//   - Suspended=True says why nothing happens and how to resume;
//   - Ready keeps its verdict when it was True: the children that made the object ready are still
//     there, so kstatus reads it Current and a wait on it ends; otherwise Ready=False with reason
//     Suspended, which kstatus reads InProgress (nothing will make it ready until it resumes);
//   - Reconciling and Stalled are removed, so kstatus never reads a suspended object as Failed;
//   - status.observedGeneration (and the conditions') stays at the generation the suspension was
//     first seen at: a spec changed while suspended reads InProgress in kstatus until it is applied
//     after the resume, while an unchanged suspended object stays Current.
//
// Resuming removes the Suspended condition and converges at once. Deleting a suspended object is not
// suspended: its children are deleted in order and the finalizer removed, since a deletion that waited
// for a resume would hold the object, and a finalizer dropped without it would orphan its children.
//
// # Conditions
//
// Ready, Reconciling and Stalled follow kstatus (package status). The reasons the Reconciler writes:
//
//   - Reconciled: Ready=True, every child is applied and ready.
//   - Progressing: every child is applied, some are not ready yet (Reconciling=True).
//   - WaitingForDependencies: some child is held back until the children it depends on are ready
//     (Reconciling=True).
//   - ObserveFailed, ApplyFailed, DeleteFailed: a node's step failed (a graph.NodeError):
//     Reconciling=True, the message naming the node and the error; retried with backoff.
//   - ReconcileError: a transient error no node's step names; retried with backoff.
//   - InvalidSpec (or an *InvalidSpecError's own Reason): Stalled=True, not retried until the spec
//     changes. InvalidGraph: Children returned an invalid graph (Graph.Validate failed): Stalled=True.
//   - NotOwned: a child exists that is not this object's (another owner controls it, it existed before,
//     or KeepOnDelete released it); it is never taken without opt-in: Stalled=True, the message naming
//     the child and what to do; retried with backoff, since deleting that child sends no event.
//   - TerminalError: a hook returned controller-runtime's reconcile.TerminalError: Stalled=True.
//   - Deleting: the object is being deleted and waits for its children or its cleanup.
//   - DeletionFailed: a step of the deletion failed: Reconciling=True (Stalled=True when terminal),
//     the message naming the step; the next pass that gets further replaces it.
//
// Warning events use the same reasons; Normal events are ChildrenApplied (children recreated or
// pruned, or with WithChangeEvents any change) and ChildrenDeleted (with WithChangeEvents, each
// deletion pass that deleted children).
package reconcile
