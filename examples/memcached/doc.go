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
// Flags: --metrics-bind-address (default "0": off; the manifests serve HTTPS on ":8443" with
// authentication and authorization, see --metrics-secure), --health-probe-bind-address (":8081"),
// --leader-elect, --leader-election-namespace, --kubeconfig and the zap logging flags (--zap-log-level,
// --zap-encoder, --zap-devel...); --shard-ring, --shard-member (default $POD_NAME) and --shard-namespace
// (default $POD_NAMESPACE) run it sharded, every replica active on its share of the Memcacheds (package
// sharding; config/sharded deploys it as a StatefulSet), --webhook-host, --webhook-port (9443) and --webhook-cert-path (the
// directory of tls.crt and tls.key; default controller-runtime's, <temp>/k8s-webhook-server/serving-certs).
//
// It serves the defaulting webhook of package webhook (a memory limit and request sized from
// spec.cacheSizeMB and spec.maxConnections) unless the environment sets ENABLE_WEBHOOKS=false, as in
// kubebuilder's seeds: run outside the cluster, the operator has no certificate the API server trusts
// and no address it can reach, so the webhook configuration (config/webhook) is not installed and the
// switch turns the server off. config/default leaves the webhook out (a real cluster needs cert-manager
// for it) and sets ENABLE_WEBHOOKS=false in the manager's Deployment. The tests install config/webhook
// pointed at the test's webhook server with testing/harness.WithWebhooks.
package main
