// Package deletiontest checks the deletion choices of package reconcile (Node.KeepOnDelete,
// Node.DeletionPropagation) on a full local cluster (testing/harness with WithFullCluster:
// kube-apiserver, etcd, kube-controller-manager, kube-scheduler and kwok nodes), since what they are
// about is the garbage collector's work: a kept child outlives its owner after the collector has had
// its chance, and a foreground child's ReplicaSets and Pods are gone before it is. It holds tests only
// (build tag integration).
//
//	go test -tags integration ./reconcile/internal/deletiontest/
package deletiontest
