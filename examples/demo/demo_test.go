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
		"(ConfigMap/alice after Deployment/alice), in order.",
		"memcached-operator: Service/sessions, Deployment/sessions (Deployment/sessions after Service/sessions), in order.",
		"Done: every step went as expected.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output does not contain %q", want)
		}
	}
}

func TestInDependencyOrder(t *testing.T) {
	after := map[string][]string{"Deployment/a": nil, "Service/a": nil, "ConfigMap/a": {"Deployment/a"}}
	cases := map[string]struct {
		got     []string
		want    string
		wantErr bool
	}{
		"in order":                   {got: []string{"Deployment/a", "ConfigMap/a", "Service/a"}, want: "Deployment/a, ConfigMap/a, Service/a (ConfigMap/a after Deployment/a)"},
		"independent child first":    {got: []string{"Service/a", "Deployment/a", "ConfigMap/a"}, want: "Service/a, Deployment/a, ConfigMap/a (ConfigMap/a after Deployment/a)"},
		"dependency before its user": {got: []string{"ConfigMap/a", "Deployment/a", "Service/a"}, wantErr: true},
		"missing one":                {got: []string{"Deployment/a", "ConfigMap/a"}, wantErr: true},
		"something else deleted":     {got: []string{"Deployment/a", "ConfigMap/a", "Service/a", "Secret/a"}, wantErr: true},
		"deleted twice":              {got: []string{"Deployment/a", "Deployment/a", "ConfigMap/a", "Service/a"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := inDependencyOrder(tc.got, after)
			if (err != nil) != tc.wantErr {
				t.Fatalf("inDependencyOrder(%v) error = %v, want error %v", tc.got, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("inDependencyOrder(%v) = %q, want %q", tc.got, got, tc.want)
			}
		})
	}
}
