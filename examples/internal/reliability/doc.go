// Package reliability proves the example operators' guarantees under faults, bad input and least
// privilege, against real control planes. This package holds the suites' shared tools; the suites
// are its tests (fast ones, run by make test) and the tests of its sub-packages:
//
//   - reliability (this package's tests, full local cluster): 30% of writes answered 409 Conflict
//     while objects converge; no Secret value in any object, event or log line; pods admitted under
//     the restricted Pod Security Standard; the generated RBAC role sufficient and minimal; specs
//     valid to the schema but wrong at run time reported Stalled or Reconciling, then recovering;
//   - reliability/dryrun (plain kube-apiserver): fuzzing of the graph builders with schema-valid
//     specs, every object built accepted by server-side dry-run;
//   - reliability/chaos (build tag chaos, full local cluster): kube-apiserver killed and restarted,
//     etcd frozen, the manager killed mid-deletion, leader election with the leader killed, watch
//     events lost.
//
// Every fault ends with the same audit: every object Ready (or gone when its deletion was asked), no
// orphaned child, no leaked finalizer, no lost condition; a Recorder adds that deletions followed
// the dependency order and that no child was created twice.
//
//	m := reliability.StartManager(t, env.Config, env.Scheme, reliability.Welcome.Setup,
//		reliability.WithNamespace(ns), reliability.WithConfig(injector.Wrap))
//	reliability.CreateAll(t, env.Client, reliability.Welcome, ns, reliability.Names("w", 10))
//	m.Kill() // as SIGKILL: connections cut at once, no graceful shutdown
//	reliability.WaitConverged(t, env.Client, reliability.Expectation{Operator: reliability.Welcome, Namespace: ns}, timeout)
//
// See README.md for what runs where and how long it takes.
package reliability
