//go:build integration

package graph_test

import (
	"flag"
	"os"
	"testing"

	"github.com/convergo-dev/convergo/reconcile/internal/fixture"
	"github.com/convergo-dev/convergo/testing/harness"
)

// The integration tests run against a real kube-apiserver and etcd (plain harness mode: no
// controller-manager, so no garbage collection and no Deployment controller).

func TestMain(m *testing.M) {
	flag.Parse()
	// Fuzzing (the coordinator and each worker process run TestMain) exercises pure logic only:
	// no control plane for it.
	if flag.Lookup("test.fuzz").Value.String() != "" || flag.Lookup("test.fuzzworker").Value.String() == "true" {
		os.Exit(m.Run())
	}
	harness.Main(m)
}

const waitTimeout = fixture.WaitTimeout
