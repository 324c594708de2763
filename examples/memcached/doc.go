// Command memcached is the Memcached operator: it runs memcached caches described by Memcached objects
// (cache.convergo.dev/v1alpha1).
//
// It runs against the cluster of the current kubeconfig, or in a cluster with the manifests of
// examples/memcached/config:
//
//	kubectl apply -k examples/memcached/config/crd
//	go run ./examples/memcached --kubeconfig ~/.kube/config
//	kubectl apply -k examples/memcached/config/samples
//	kubectl wait --for=condition=Ready memcached/sessions
//
// Flags: --metrics-bind-address (default "0": off; the manifests serve HTTPS on ":8443" with
// authentication and authorization, see --metrics-secure), --health-probe-bind-address (":8081"),
// --leader-elect, --leader-election-namespace, --kubeconfig and the zap logging flags (--zap-log-level,
// --zap-encoder, --zap-devel...).
package main
