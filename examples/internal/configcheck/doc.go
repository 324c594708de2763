// Package configcheck checks the examples' repository hygiene around their images and manifests, in its
// own tests: the config/ kustomize trees without kustomize (every file a kustomization lists exists
// and parses, the manager Deployment follows the restricted Pod Security Standard: non-root, read-only
// root file system, no capabilities, seccomp; it has probes and resource requests, and runs as the
// ServiceAccount the RBAC bindings name; a config/webhook calls the manager's pods through a Service of
// its own), and each example Dockerfile's build stage, whose binary must
// build from exactly the files the Dockerfile copies.
//
// The checks follow this repository's layout and policy, so they are tests of this package rather than
// an API: the examples' own tests import only public packages, so that a user can copy them whole.
//
//	go test ./examples/internal/configcheck/
package configcheck
