package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergo-dev/convergo/testing/assets"
)

func TestShellQuote(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"plain": {in: "/a/b", want: "'/a/b'"},
		"space": {in: "/a b", want: "'/a b'"},
		"quote": {in: "/it's", want: `'/it'\''s'`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := shellQuote(tc.in); got != tc.want {
				t.Errorf("shellQuote(%q) = %s, want %s", tc.in, got, tc.want)
			}
			out, err := exec.Command("sh", "-c", "printf %s "+shellQuote(tc.in)).Output()
			if err != nil || string(out) != tc.in {
				t.Errorf("sh reads %s as %q (err %v), want %q", shellQuote(tc.in), out, err, tc.in)
			}
		})
	}
}

func TestRunFlags(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []assets.Component{assets.KubeAPIServer, assets.Etcd} {
		version := "Kubernetes v1.37.0"
		if c == assets.Etcd {
			version = "etcd Version: 3.7.0"
		}
		if err := os.WriteFile(filepath.Join(dir, string(c)), []byte("#!/bin/sh\necho '"+version+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(assets.EnvAssets, dir)
	cases := map[string]struct {
		args    []string
		want    int
		wantOut string
	}{
		"defaults":          {args: nil, want: 0, wantOut: dir + "\n"},
		"print env":         {args: []string{"-print", "env"}, want: 0, wantOut: "export KUBEBUILDER_ASSETS=" + shellQuote(dir) + "\n"},
		"bad print":         {args: []string{"-print", "json"}, want: 2},
		"unknown component": {args: []string{"-components", "kubelet"}, want: 2},
		"extra argument":    {args: []string{"extra"}, want: 2},
		"unknown flag":      {args: []string{"-nope"}, want: 2},
		"help":              {args: []string{"-h"}, want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			if got := run(tc.args, &stdout, &stderr); got != tc.want {
				t.Errorf("run(%q) = %d, want %d; stderr:\n%s", strings.Join(tc.args, " "), got, tc.want, stderr.String())
			}
			if stdout.String() != tc.wantOut {
				t.Errorf("stdout = %q, want %q", stdout.String(), tc.wantOut)
			}
		})
	}
}
