package main

import (
	"testing"

	"github.com/convergo-dev/convergo/examples/internal/configcheck"
)

// TestDockerfiles builds the operator and the web app from exactly the files their Dockerfiles copy.
func TestDockerfiles(t *testing.T) {
	for _, path := range []string{"examples/welcome/Dockerfile", "examples/welcome/web/Dockerfile"} {
		t.Run(path, func(t *testing.T) { configcheck.Dockerfile(t, "../..", path) })
	}
}
