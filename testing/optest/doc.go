// Package optest holds the steps an operator's integration tests take against the plain API server of
// testing/harness, which runs no controller-manager and no kubelet: create a custom resource with a
// cleanup that waits for the operator to release it, update it through conflicts, wait for its
// conditions, hold a child with a finalizer, report a Deployment available as the Deployment controller
// would, read the events about an object, and run the operator with only the permissions of its
// generated RBAC role.
//
// For an operator built on reconcile.Reconciler it also checks what the operator does once converged.
// StartOperator starts it with its requests counted (harness.RequestCounter) and its reconciles
// recorded per object (Reconciles, through reconcile.ContextWithObserver); ReconcileAfter waits until a given
// object has really been reconciled after a change, by a reconcile that started once the manager's
// cache showed that change; ExpectNoRequests asserts that such a reconcile, for each of several
// changes, costs no API request at all.
//
//	var conditionsAre = optest.ConditionsAre[*v1alpha1.Memcached]
//
//	var ready = map[string]string{status.Ready: "True/Reconciled", status.Reconciling: "absent", status.Stalled: "absent"}
//
//	func TestZeroRequestsOnceConverged(t *testing.T) {
//		env := harness.Default()
//		ns := env.Namespace(t)
//		op := optest.StartOperator(t, env, controller.SetupWithManager)
//		mc := optest.Create(t, env.Client, &v1alpha1.Memcached{
//			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"}, Spec: v1alpha1.MemcachedSpec{Size: 3}})
//		key := client.ObjectKeyFromObject(mc)
//		harness.WaitForObject(t, env.Client, key, &appsv1.Deployment{}, optest.Timeout, nil)
//		optest.MarkDeploymentAvailable(t, env.Client, key)
//		harness.WaitForObject(t, env.Client, key, mc, optest.Timeout, conditionsAre(ready))
//
//		op.ExpectNoRequests(t, key, map[string]optest.Trigger{
//			"annotation on the memcached": func(t testing.TB) client.Object {
//				return optest.MergePatch(t, env.Client, mc, `{"metadata":{"annotations":{"example.com/note":"hello"}}}`)
//			},
//			"label added to the deployment by someone else": func(t testing.TB) client.Object {
//				return optest.MergePatch(t, env.Client, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"}},
//					`{"metadata":{"labels":{"example.com/team":"cache"}}}`)
//			},
//		})
//	}
//
// For a node outside the API server (graph.AddExternal), CountExternal wraps the node's External so
// that an ExternalCounter records each call per kind and step (Observe, Apply, Delete, Release), with
// the time it was made, which orders it against the API requests a harness.RequestCounter records.
// The wrapper implements graph.Releaser exactly when the wrapped External does. ExternalCounter.OnCall
// runs a function before each call: it may hold the call while the test breaks the external system,
// or fail it.
//
// Every wait of the package is bounded by Timeout and, on timeout, fails the test with the last state
// it saw.
package optest
