// Package graph declares an owner's children as named nodes with dependencies and readiness checks,
// and applies, deletes and prunes them in dependency order through an apply.Applier.
//
//	g := graph.New()
//	g.Add("config", configMap)
//	g.Add("deployment", deployment).DependsOn("config").ReadyWhen(builders.DeploymentAvailable)
//	g.Add("service", service) // needs nothing to exist first: applied at once, beside the config
//	res, err := g.Apply(ctx, a, owner)            // in order; waits for readiness
//	pruned, err := g.Prune(ctx, a, owner, kinds...) // what the graph no longer declares
//	del, err := g.Delete(ctx, a, owner)           // reverse order, on deletion, until del.Done
//
// Apply records on each child its node and dependencies (the annotations convergo.dev/node and
// convergo.dev/depends-on), so that
// `kubectl convergo tree` (cmd/kubectl-convergo) can show a live object's children in graph order.
//
// Each child chooses how it goes when its owner is deleted or the graph stops declaring it: a kept
// child (KeepOnDelete) is released instead of deleted, and a foreground child (DeletionPropagation) is
// gone only after its own dependents.
//
//	g.Add("data", pvc).KeepOnDelete()
//	g.Add("web", deployment).DependsOn("data").DeletionPropagation(metav1.DeletePropagationForeground)
//
// After Apply, Live gives a child's live object as its own type. An object outside the API server is
// an external node (AddExternal), managed by an External of its kind or an ExternalFuncs of functions;
// OwnerMark and OwnerFromMark write and read its owner mark in free text.
//
//	if d, ok := graph.Live[*appsv1.Deployment](res, "deployment"); ok {
//		readyReplicas = d.Status.ReadyReplicas
//	}
package graph
