// Command applycost measures what kube-apiserver and etcd spend to create the Welcome example's three
// children (a ConfigMap, a Service, a Deployment) by a plain create (POST, what the expert's
// CreateOrPatch sends) and by a server-side apply of the same object (what Convergo sends, invariant 2
// of docs/design.md), on a control plane of its own whose controller-manager runs no workload
// controllers, so nothing but the writes is measured. The methods take turns in batches, in the order
// create, apply, apply, create, so that a cost that grows with the objects stored weighs on both
// alike; one batch of each warms up first and is not counted.
//
//	go run ./bench/cmd/applycost -n 100 -batches 8
package main
