// Package gencheck lets the examples' tests fail when the committed generated files (deepcopy code, CRDs,
// RBAC) are stale. It runs the pinned controller-gen exactly as `make generate manifests` does, into
// temporary files, and compares the output with the committed files.
//
//	func TestGeneratedFilesAreCurrent(t *testing.T) {
//		gencheck.Check(t, "memcached")
//	}
//
// When the pinned binary is not installed the check is skipped with a message saying how to install it
// (`make tools`; `make test` installs it first).
package gencheck
