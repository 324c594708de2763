// Package reconcile applies an operator's owned children with zero spurious writes, orders them in
// a dependency graph, and composes everything into a generic reconciler.
//
// Apply takes the child as a typed object holding only what the operator cares about. It reads the
// live object from the cache, compares only the fields the desired object sets (numbers by value,
// quantities by value, lists as ordered subsequences) plus a hash of that intent, and sends a
// server-side apply only when they differ. Defaulted fields never cause a write, a field dropped
// from the desired object is removed from the live one, and a child of another owner is never
// taken over.
//
//	a := reconcile.NewApplier(mgr.GetClient(), mgr.GetScheme(), reconcile.WithFieldManager("memcached"))
//	op, err := a.Apply(ctx, memcached, &appsv1.Deployment{
//		ObjectMeta: metav1.ObjectMeta{Name: memcached.Name},
//		Spec:       appsv1.DeploymentSpec{ /* only what you mean */ },
//	})
//
// A Graph declares named children with dependencies and readiness checks:
//
//	g := reconcile.NewGraph()
//	g.Add("config", configMap)
//	g.Add("deployment", deployment).DependsOn("config").ReadyWhen(builders.DeploymentAvailable)
//	g.Add("service", service).DependsOn("deployment")
//	res, err := g.Apply(ctx, a, owner)        // in order; waits for readiness
//	pruned, err := a.Prune(ctx, owner, g, &corev1.Service{}, &corev1.ConfigMap{}, &appsv1.Deployment{})
//	done, err := g.Delete(ctx, a, owner)      // reverse order, on deletion, until done
package reconcile
