// Package deploy deploys the example operators to a cluster and removes them: what `make deploy` and
// `make undeploy` (the examples/deploy command) run, and what this package's tests check on a real API
// server.
//
// Load renders an example's kustomize tree without kustomize, for the subset the examples use
// (resources and the images transformer; anything else is refused); Apply server-side applies the
// objects as FieldOwner. Deploy applies config/default, waits for the CRDs and the operator's
// Deployment, and, when the Deployment's pods are on kwok's fake nodes (the local cluster of
// `make demo`), runs the operator from its built binary as a local process, not from an image, with
// the permissions of its ServiceAccount (a kubeconfig that impersonates it); then it applies
// config/samples and waits until they are Ready. Undeploy deletes the samples while the operator still
// runs, so that it releases its finalizers, then stops it and deletes the rest.
//
//	err := deploy.Deploy(ctx, deploy.Options{
//		Root:       root, // the repository root
//		Example:    "welcome",
//		Kubeconfig: "demo-run/cluster/kubeconfig",
//		Out:        os.Stdout,
//	})
//
// The tests (build tag integration) apply each example's config/default to the harness's API server,
// check that its namespace enforces the restricted Pod Security Standard and admits the operator's
// pods, run the operator in-process impersonating its ServiceAccount until a sample is Ready, and run
// Deploy and Undeploy end to end on a full local cluster:
//
//	go test -tags integration ./examples/internal/deploy/
package deploy
