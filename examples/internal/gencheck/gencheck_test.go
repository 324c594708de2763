package gencheck

import "testing"

// TestGeneratedFilesAreCurrent fails when an example's committed deepcopy code, CRD, RBAC role or webhook
// configuration differ
// from what `make generate manifests` produces. (Here rather than in the examples, whose tests import
// only what users can.)
func TestGeneratedFilesAreCurrent(t *testing.T) {
	for _, example := range []string{"memcached", "welcome"} {
		t.Run(example, func(t *testing.T) { check(t, example) })
	}
}
