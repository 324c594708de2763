package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// kubeconfig is a kubeconfig file with two contexts; "dev" is current and has a namespace.
const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: u
  user: {token: t}
contexts:
- name: dev
  context: {cluster: c, user: u, namespace: team}
- name: prod
  context: {cluster: c, user: u}
current-context: dev
`

func TestParseArgs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	type parsed struct {
		Resource, Name, Output, Namespace string
	}
	tests := map[string]struct {
		args    []string
		want    parsed
		wantErr string
	}{
		"resource/name, the context's namespace": {
			args: []string{"tree", "welcome/alice", "--kubeconfig", path},
			want: parsed{Resource: "welcome", Name: "alice", Namespace: "team"},
		},
		"resource name, -n, -o json, flags first": {
			args: []string{"--kubeconfig=" + path, "tree", "-o", "json", "welcomes.web.convergo.dev", "alice", "-n", "demo"},
			want: parsed{Resource: "welcomes.web.convergo.dev", Name: "alice", Output: "json", Namespace: "demo"},
		},
		"another context": {
			args: []string{"tree", "deploy/web", "--kubeconfig", path, "--context", "prod"},
			want: parsed{Resource: "deploy", Name: "web", Namespace: "default"},
		},
		"no command":           {args: []string{"--kubeconfig", path}, wantErr: "no command: want tree"},
		"unknown command":      {args: []string{"trace", "welcome/alice"}, wantErr: `unknown command "trace": want tree`},
		"no name":              {args: []string{"tree", "welcome"}, wantErr: `tree takes <resource>/<name> or <resource> <name>, got "welcome"`},
		"empty name":           {args: []string{"tree", "welcome/"}, wantErr: `tree takes <resource>/<name>, got "welcome/"`},
		"too many":             {args: []string{"tree", "welcome/alice", "bob"}, wantErr: `tree takes <resource>/<name> or <resource> <name>, got "welcome/alice bob"`},
		"unknown output":       {args: []string{"tree", "welcome/alice", "-o", "yaml"}, wantErr: `unknown output format "yaml": want json, or none for a table`},
		"unknown flag":         {args: []string{"tree", "welcome/alice", "--colour"}, wantErr: "unknown flag: --colour"},
		"help is not an error": {args: []string{"--help"}, wantErr: errHelp.Error()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a, err := parseArgs(tc.args, io.Discard)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("parseArgs error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseArgs: %v", err)
			}
			ns, _, err := a.config.Namespace()
			if err != nil {
				t.Fatalf("namespace: %v", err)
			}
			got := parsed{Resource: a.resource, Name: a.name, Output: a.output, Namespace: ns}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseArgs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunExitCodes(t *testing.T) {
	tests := map[string]struct {
		args []string
		want int
	}{
		"help":              {args: []string{"-h"}, want: 0},
		"usage error":       {args: []string{"tree"}, want: 2},
		"unreadable config": {args: []string{"tree", "welcome/alice", "--kubeconfig", filepath.Join(t.TempDir(), "missing")}, want: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := run(t.Context(), tc.args, io.Discard, io.Discard); got != tc.want {
				t.Errorf("run(%q) = %d, want %d", tc.args, got, tc.want)
			}
		})
	}
}

func TestParseMembers(t *testing.T) {
	tests := map[string]struct {
		args    []string
		want    map[string]string
		wantErr string
	}{
		"none": {want: map[string]string{}},
		"two, spaces trimmed": {
			args: []string{"--member", "eu-1=/home/me/.kube/eu-1", "--member= us-east = us-east.yaml "},
			want: map[string]string{"eu-1": "/home/me/.kube/eu-1", "us-east": "us-east.yaml"},
		},
		"a path with =": {
			args: []string{"--member", "eu-1=/tmp/a=b"},
			want: map[string]string{"eu-1": "/tmp/a=b"},
		},
		"no =": {
			args:    []string{"--member", "eu-1"},
			wantErr: `--member "eu-1": no "=": give the member's name, "=" and its kubeconfig file, such as --member eu-1=$HOME/.kube/eu-1`,
		},
		"no name": {
			args:    []string{"--member", "=/tmp/eu-1"},
			wantErr: `--member "=/tmp/eu-1": no name before "=": give the member's name, the value of the label convergo.dev/member-cluster of its Secret (or any name)`,
		},
		"no path": {
			args:    []string{"--member", "eu-1="},
			wantErr: `--member "eu-1=": no kubeconfig path after "=": give the path of a kubeconfig file that reaches the member`,
		},
		"twice": {
			args:    []string{"--member", "eu-1=a", "--member", "eu-1=b"},
			wantErr: `--member "eu-1=b": member cluster "eu-1" is already given: give each member once`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a, err := parseArgs(append([]string{"tree", "welcome/alice"}, tc.args...), io.Discard)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("parseArgs error = %v, want %q", err, tc.wantErr)
				}
				if errors.Unwrap(err) == nil {
					t.Errorf("parseArgs error %q wraps nothing", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseArgs: %v", err)
			}
			if diff := cmp.Diff(tc.want, a.members); diff != "" {
				t.Errorf("members (-want +got):\n%s", diff)
			}
			if a.memberSecretsNamespace != defaultMemberSecretsNamespace {
				t.Errorf("member Secrets namespace %q, want %q", a.memberSecretsNamespace, defaultMemberSecretsNamespace)
			}
		})
	}
}
