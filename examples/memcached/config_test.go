package main

import (
	"testing"

	"github.com/convergo-dev/convergo/examples/internal/configcheck"
)

// TestConfig checks the kustomize tree: every listed file exists and parses, the manager runs as a
// non-root, read-only, capability-free container with probes and requests, as the ServiceAccount the
// generated role is bound to.
func TestConfig(t *testing.T) {
	configcheck.Check(t, "config", "memcached")
}
