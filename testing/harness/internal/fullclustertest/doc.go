// Package fullclustertest tests the harness in full-cluster mode (harness.WithFullCluster): a local
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok nodes. It holds tests only.
//
//	go test ./testing/harness/internal/fullclustertest/
package fullclustertest
