package harness

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// mainStartTimeout bounds Start in Main. It is long because the first run on a machine builds
// kube-apiserver and etcd from source.
const mainStartTimeout = 45 * time.Minute

var (
	defaultMu  sync.Mutex
	defaultEnv *Env
)

// Main is for TestMain: it starts the environment (kept for Default), runs the tests, stops the
// environment and exits with the tests' code. A start failure is printed and exits 1. The environment
// is stopped also when m.Run panics on the main goroutine and on SIGINT/SIGTERM; when the test binary
// dies without stopping it (go test's -timeout, SIGKILL), its components stop too (the full cluster's
// by the parent-death signal, envtest's kube-apiserver and etcd by a watchdog, on Linux). In
// full-cluster mode a failed run prints the tail of every component's log.
//
//	func TestMain(m *testing.M) {
//		harness.Main(m, harness.WithCRDPaths("../config/crd/bases"))
//	}
//
// A fuzz worker (a child process of go test -fuzz, which only runs the fuzz function) starts no
// control plane.
func Main(m *testing.M, opts ...Option) {
	if slices.ContainsFunc(os.Args, func(a string) bool { return strings.HasPrefix(a, "-test.fuzzworker") }) {
		os.Exit(m.Run())
	}
	os.Exit(runMain(m, opts...))
}

func runMain(m *testing.M, opts ...Option) (code int) {
	setGlobalLogger()
	ctx, cancel := context.WithTimeout(context.Background(), mainStartTimeout)
	env, err := Start(ctx, opts...)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "harness: cannot start the test control plane: %v\n", err)
		return 1
	}
	defaultMu.Lock()
	defaultEnv = env
	defaultMu.Unlock()

	// Stop the control plane when the run is interrupted, so no apiserver or etcd outlives it.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			fmt.Fprintf(os.Stderr, "harness: %v: stopping the test control plane\n", sig)
			if err := env.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "harness: stop: %v\n", err)
			}
			os.Exit(1)
		case <-done:
		}
	}()

	defer func() {
		r := recover()
		signal.Stop(sigs)
		close(done)
		if code != 0 || r != nil {
			if tails := env.LogTails(40); tails != "" {
				fmt.Fprintf(os.Stderr, "harness: tests failed; control-plane logs:\n%s\n", tails)
			}
		}
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "harness: stop the test control plane: %v\n", err)
		}
		defaultMu.Lock()
		defaultEnv = nil
		defaultMu.Unlock()
		if r != nil {
			panic(r)
		}
	}()
	return m.Run()
}

// Default returns the environment started by Main. It panics when Main is not in use.
func Default() *Env {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if defaultEnv == nil {
		panic("harness.Default: no environment is running; start one from TestMain with harness.Main(m, ...)")
	}
	return defaultEnv
}

// setGlobalLogger gives controller-runtime's global logger a sink (errors only, to stderr), so that
// its "log.SetLogger(...) was never called" warning does not appear and errors
// logged outside a manager stay visible. Managers started by StartManager log to their test instead.
func setGlobalLogger() {
	ctrllog.SetLogger(funcr.New(func(prefix, args string) {
		if prefix != "" {
			fmt.Fprintf(os.Stderr, "%s: %s\n", prefix, args)
			return
		}
		fmt.Fprintln(os.Stderr, args)
	}, funcr.Options{Verbosity: -1}))
}
