// Package optest holds what the examples' integration tests share: simulating what a kubelet and the
// Deployment controller would report on a bare API server, counting reconciles, reading events, and
// running an operator with only the permissions of its generated RBAC role.
//
//	optest.MarkDeploymentAvailable(t, env.Client, client.ObjectKey{Namespace: ns, Name: "cache"})
//	before := optest.ReconcileCount(t, "memcached-operator")
//	// ... trigger a reconcile ...
//	optest.WaitForReconciles(t, "memcached-operator", before+1)
package optest
