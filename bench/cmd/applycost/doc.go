// Command applycost measures what kube-apiserver and etcd spend to create the Welcome example's three
// children (a ConfigMap, a Service, a Deployment) by a plain create (POST, what the expert's
// CreateOrPatch sends) and by a server-side apply of the same object (what Convergo sends, invariant 2
// of docs/design.md), on a control plane of its own whose controller-manager runs no workload
// controllers, so nothing but the writes is measured. The methods alternate round by round.
//
//	go run ./bench/cmd/applycost -n 600 -rounds 3
package main
