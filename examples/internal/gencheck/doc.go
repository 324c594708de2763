// Package gencheck fails, in its own test, when the examples' committed generated files (deepcopy code,
// CRDs, RBAC) are stale. It runs the pinned controller-gen exactly as `make generate manifests` does,
// into temporary files, and compares the output with the committed files.
//
// The check follows this repository's Makefile (the pinned binary in ./bin, the examples' paths), so it
// is a test of this package rather than an API: the examples' own tests import only public packages,
// so that a user can copy them whole.
//
//	go test ./examples/internal/gencheck/
//
// When the pinned binary is not installed the check is skipped with a message saying how to install it
// (`make tools`; `make test` installs it first).
package gencheck
