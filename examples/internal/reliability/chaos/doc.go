// Package chaos holds the reliability suite's slow fault tests, built only with the chaos build tag
// so that make test skips them:
//
//	go test -tags chaos -timeout 30m ./examples/internal/reliability/chaos/
//
// Each test runs the example operators on a full local cluster (testing/cluster) and breaks
// something mid-way: kube-apiserver killed with SIGKILL and restarted on the same etcd, etcd frozen
// for 10 seconds, the operator's manager killed in the middle of an ordered deletion, the leader of
// two managers killed, watch events lost so that the manager's cache goes stale. Each ends with the
// same audit (reliability.Audit): every object Ready or deleted as asked, no orphaned child, no
// leaked finalizer, no lost condition, and deletions in dependency order.
package chaos
