// Command deploy deploys an example operator to a cluster the kubebuilder way, and removes it again:
//
//	make deploy-welcome                       # or: go run ./examples/deploy deploy welcome
//	make undeploy-welcome                     # or: go run ./examples/deploy undeploy welcome
//	make deploy EXAMPLE=memcached KUBECONFIG=~/.kube/config IMG=registry.example/memcached-operator:dev
//
// deploy server-side applies the example's config/default (its namespace, which enforces the
// "restricted" Pod Security Standard, the CRDs, the RBAC, the operator's Deployment and metrics
// Service), waits until the Deployment is Available, and applies config/samples (a Welcome's password
// Secret first, with a random password that is never printed), waiting until each sample is Ready.
//
// On the local cluster that `make demo ARGS=--keep` leaves running (the default cluster: its kubeconfig
// is demo-run/cluster/kubeconfig), the Deployment's pods are kwok's, which are reported Ready but run
// nothing. There the operator itself runs from the built binary (go build ./examples/<name>), not from
// an image, as a local process with the Deployment's arguments and the permissions of its
// ServiceAccount (the kubeconfig it is given impersonates system:serviceaccount:<namespace>:<name>).
// It keeps running after deploy returns; its log, process ID and kubeconfig are in
// deploy-run/<name>/. On a cluster with real nodes, the Deployment's pods are the operator.
//
// undeploy deletes the samples (and, for a CRD it deletes, every object of its kind) while the
// operator runs, so that it releases its finalizers, then stops the local operator and deletes the
// rest of config/default, the CRDs and the namespace last. A CRD that another manager also created (the
// demo installs both CRDs itself) is kept.
package main
