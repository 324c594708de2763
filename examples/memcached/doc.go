// Command memcached is the Memcached operator: it runs memcached caches described by Memcached objects
// (cache.convergo.dev/v1alpha1).
//
// It runs against the cluster of the current kubeconfig, or in a cluster with the manifests of
// examples/memcached/config:
//
//	kubectl apply -k examples/memcached/config/crd
//	ENABLE_WEBHOOKS=false go run ./examples/memcached --kubeconfig ~/.kube/config
//	kubectl apply -k examples/memcached/config/samples
//	kubectl wait --for=condition=Ready memcached/sessions
//
// Flags: --metrics-bind-address (default "0": off), --health-probe-bind-address (":8081"),
// --leader-election-namespace (elect a leader with a Lease there), --kubeconfig, the zap logging flags (--zap-log-level, --zap-devel...),
// --webhook-port (9443) and --webhook-cert-path (the directory of tls.crt and tls.key; default
// controller-runtime's, <temp>/k8s-webhook-server/serving-certs). Sharding is shown in the Welcome
// example.
//
// It serves the defaulting webhook of package webhook (a memory limit and request sized from
// spec.cacheSizeMB and spec.maxConnections) unless the environment sets ENABLE_WEBHOOKS=false, as in
// kubebuilder's seeds: run outside the cluster, the operator has no certificate the API server trusts
// and no address it can reach, so the webhook configuration (config/webhook) is not installed and the
// switch turns the server off. config/default leaves the webhook out (a real cluster needs cert-manager
// for it) and sets ENABLE_WEBHOOKS=false in the manager's Deployment. The tests install config/webhook
// pointed at the test's webhook server with testing/harness.WithWebhooks.
package main
