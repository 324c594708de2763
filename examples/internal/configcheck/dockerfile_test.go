package configcheck

import "testing"

// TestDockerfiles builds the examples' operators and the Welcome web app from exactly the files their
// Dockerfiles copy. (Here rather than in the examples, whose tests import only what users can.)
func TestDockerfiles(t *testing.T) {
	for _, path := range []string{
		"examples/memcached/Dockerfile",
		"examples/welcome/Dockerfile",
		"examples/welcome/web/Dockerfile",
	} {
		t.Run(path, func(t *testing.T) { checkDockerfile(t, "../../..", path) })
	}
}
