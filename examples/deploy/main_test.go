package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRefuses checks what the command refuses before it reaches a cluster, and that each refusal
// says what to do.
func TestRunRefuses(t *testing.T) {
	dir := t.TempDir()
	unreachable := filepath.Join(dir, "unreachable.kubeconfig")
	config := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n" +
		"users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n"
	if err := os.WriteFile(unreachable, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		args       []string
		wantCode   int
		wantStderr string
	}{
		"no arguments":    {args: nil, wantCode: 2, wantStderr: "want deploy or undeploy and an example"},
		"unknown action":  {args: []string{"install", "welcome"}, wantCode: 2, wantStderr: "want deploy or undeploy"},
		"unknown example": {args: []string{"deploy", "nginx"}, wantCode: 2, wantStderr: `no example "nginx"`},
		"unknown flag":    {args: []string{"-nope", "deploy", "welcome"}, wantCode: 2, wantStderr: "flag provided but not defined"},
		"help":            {args: []string{"-h"}, wantCode: 0, wantStderr: "not from an image"},
		"no kubeconfig":   {args: []string{"-kubeconfig", filepath.Join(dir, "missing"), "deploy", "welcome"}, wantCode: 1, wantStderr: "make demo ARGS=--keep"},
		"unreachable":     {args: []string{"-kubeconfig", unreachable, "undeploy", "memcached"}, wantCode: 1, wantStderr: "cannot reach the API server https://127.0.0.1:1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			if got := run(t.Context(), tc.args, &stdout, &stderr); got != tc.wantCode {
				t.Errorf("run(%q) = %d, want %d; stderr:\n%s", tc.args, got, tc.wantCode, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr does not say %q:\n%s", tc.wantStderr, stderr.String())
			}
		})
	}
}
