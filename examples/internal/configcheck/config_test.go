package configcheck

import "testing"

// TestConfigs checks the examples' kustomize trees: every listed file exists and parses, the manager
// runs as a non-root, read-only, capability-free container with probes and requests, as the
// ServiceAccount the generated role is bound to. (Here rather than in the examples, whose tests import
// only what users can.)
func TestConfigs(t *testing.T) {
	for _, example := range []string{"memcached", "welcome"} {
		t.Run(example, func(t *testing.T) { check(t, "../../"+example+"/config", example) })
	}
}
