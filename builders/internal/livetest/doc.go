// Package livetest checks the builders against a real cluster (testing/harness with a full local
// cluster: kube-apiserver, etcd, kube-controller-manager, kube-scheduler and kwok nodes): the API
// server accepts every builder's output, the PodSecurity admission admits the pods under the
// "restricted" standard, and the readiness checks agree with the state the real controllers report.
// It holds tests only.
package livetest
