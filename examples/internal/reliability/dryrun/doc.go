// Package dryrun holds the reliability suite's fuzz tests of the example operators' graph builders:
// random specs that the API server's schema accepts go through Children, and every object built is
// sent to a real kube-apiserver with a server-side dry-run, through the operators' own Applier, in a
// namespace that enforces the restricted Pod Security Standard. Nothing is stored; no controller runs.
//
// The seed corpus runs with go test (make test); explore further with, for example:
//
//	go test ./examples/internal/reliability/dryrun -run '^$' -fuzz FuzzMemcachedChildren -fuzztime 5m
//
// A failing input is saved under testdata/fuzz and becomes part of the corpus.
package dryrun
