package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestDemo runs the whole demo on a full local cluster (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and one kwok node): the samples converge, the Welcome recovers from its missing Secret,
// both scale up, and both operators delete their children in reverse order. It needs every
// control-plane binary (`make assets`; `make test` builds them first) and is skipped with -short.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo starts a full local cluster; skipped with -short")
	}
	var out bytes.Buffer
	err := run(t.Context(), &out, options{nodes: 1, timeout: 3 * time.Minute, runDir: t.TempDir()})
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatalf("demo failed: %v", err)
	}
	for _, want := range []string{
		"Stalled=True (SecretNotFound)",
		"welcome-operator: Service/alice -> Deployment/alice -> ConfigMap/alice, in order.",
		"memcached-operator: Service/sessions -> Deployment/sessions, in order.",
		"Done: every step went as expected.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output does not contain %q", want)
		}
	}
}
