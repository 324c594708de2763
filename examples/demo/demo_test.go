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
		"welcome-operator: Deployment/alice -> ConfigMap/alice + Service/alice, in order.",
		"memcached-operator: Service/sessions -> Deployment/sessions, in order.",
		"Done: every step went as expected.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output does not contain %q", want)
		}
	}
}

func TestInLayers(t *testing.T) {
	layers := [][]string{{"Deployment/a"}, {"ConfigMap/a", "Service/a"}}
	cases := map[string]struct {
		got     []string
		want    string
		wantErr bool
	}{
		"in order":                {got: []string{"Deployment/a", "ConfigMap/a", "Service/a"}, want: "Deployment/a -> ConfigMap/a + Service/a"},
		"free order within layer": {got: []string{"Deployment/a", "Service/a", "ConfigMap/a"}, want: "Deployment/a -> ConfigMap/a + Service/a"},
		"second layer first":      {got: []string{"Service/a", "Deployment/a", "ConfigMap/a"}, wantErr: true},
		"missing one":             {got: []string{"Deployment/a", "Service/a"}, wantErr: true},
		"something else deleted":  {got: []string{"Deployment/a", "ConfigMap/a", "Service/a", "Secret/a"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := inLayers(tc.got, layers)
			if (err != nil) != tc.wantErr {
				t.Fatalf("inLayers(%v) error = %v, want error %v", tc.got, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("inLayers(%v) = %q, want %q", tc.got, got, tc.want)
			}
		})
	}
}
