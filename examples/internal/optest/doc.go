// Package optest holds what the examples' integration tests share: simulating what a kubelet and the
// Deployment controller would report on a bare API server, counting reconciles, reading events,
// running an operator with only the permissions of its generated RBAC role, and the typed steps every
// operator test takes (create a custom resource with a cleanup, update it on conflicts, wait for its
// conditions, hold a child with a finalizer).
//
//	var conditionsAre = optest.ConditionsAre[*v1alpha1.Memcached]
//
//	mc := optest.Create(t, env.Client, &v1alpha1.Memcached{ /* ... */ })
//	optest.MarkDeploymentAvailable(t, env.Client, client.ObjectKey{Namespace: ns, Name: "cache"})
//	harness.WaitForObject(t, env.Client, key, mc, optest.Timeout, conditionsAre(ready))
//	optest.Update(t, env.Client, mc, func(mc *v1alpha1.Memcached) { mc.Spec.Size = 4 })
//	before := optest.ReconcileCount(t, "memcached-operator")
//	// ... trigger a reconcile ...
//	optest.WaitForReconciles(t, "memcached-operator", before+1)
package optest
