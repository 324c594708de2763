package main

import (
	"testing"

	"github.com/convergo-dev/convergo/examples/internal/configcheck"
)

// TestDockerfile builds the operator from exactly the files its Dockerfile copies.
func TestDockerfile(t *testing.T) {
	configcheck.Dockerfile(t, "../..", "examples/memcached/Dockerfile")
}
