// Package configcheck lets the examples' tests check their config/ kustomize trees without kustomize:
// every file a kustomization lists exists and parses, the manager Deployment follows the restricted Pod
// Security Standard (non-root, read-only root file system, no capabilities, seccomp), has probes and
// resource requests, and runs as the ServiceAccount the RBAC bindings name. Its own test builds each
// example Dockerfile's binary from exactly the files the Dockerfile copies.
//
//	func TestConfig(t *testing.T) {
//		configcheck.Check(t, "config", "memcached")
//	}
package configcheck
