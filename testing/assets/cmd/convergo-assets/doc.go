// Command convergo-assets locates or builds the control-plane binaries Convergo's tests use
// (kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kwok) and kubectl, and prints where
// they are.
//
// Binaries are built from the Go module proxy into a per-user cache on first use; progress goes to
// stderr, the result to stdout:
//
//	go run ./testing/assets/cmd/convergo-assets -components all              # build or locate, print the directory
//	go run ./testing/assets/cmd/convergo-assets -components kubectl          # only kubectl (for envtest's KubeCtl)
//	eval "$(go run ./testing/assets/cmd/convergo-assets -print env)"          # export KUBEBUILDER_ASSETS=...
package main
