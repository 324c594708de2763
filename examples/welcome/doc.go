// Command welcome is the Welcome operator: it runs the web sites described by Welcome objects
// (web.convergo.dev/v1alpha1).
//
// It runs against the cluster of the current kubeconfig, or in a cluster with the manifests of
// examples/welcome/config:
//
//	kubectl apply -k examples/welcome/config/crd
//	go run ./examples/welcome --kubeconfig ~/.kube/config
//	kubectl create secret generic alice-password --from-literal=password="$(openssl rand -base64 18)"
//	kubectl apply -k examples/welcome/config/samples
//	kubectl wait --for=condition=Ready welcome/alice
//	kubectl get welcome alice -o jsonpath='{.status.serviceURL}'
//
// config/admission (part of config/default) holds a MutatingAdmissionPolicy under which the API
// server adds the operator's finalizer to every new Welcome (Kubernetes 1.36 or later), which saves
// the operator one request per Welcome; `kubectl apply -k examples/welcome/config/admission` installs
// it alone.
//
// The web server it deploys is examples/welcome/web. A Welcome whose password Secret does not exist
// is Stalled with reason SecretNotFound until the Secret is created.
//
// Flags: --metrics-bind-address (default "0": off; the manifests serve HTTPS on ":8443" with
// authentication and authorization, see --metrics-secure), --health-probe-bind-address (":8081"),
// --leader-elect, --leader-election-namespace, --kubeconfig and the zap logging flags (--zap-log-level,
// --zap-encoder, --zap-devel...); --shard-ring, --shard-member (default $POD_NAME) and --shard-namespace
// (default $POD_NAMESPACE) run it sharded, every replica active on its share of the Welcomes (package
// sharding; config/sharded deploys it as a StatefulSet).
package main
