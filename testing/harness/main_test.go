//go:build integration

package harness_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/convergo-dev/convergo/testing/harness"
)

// envMode lets a test re-run this test binary with a different TestMain setup.
const envMode = "CONVERGO_HARNESS_TEST_MODE"

func TestMain(m *testing.M) {
	switch os.Getenv(envMode) {
	case "missing-crd-path":
		harness.Main(m, harness.WithCRDPaths("testdata/does-not-exist"))
	case modeKilled:
		startAndDie()
	default:
		harness.Main(m, harness.WithCRDPaths("testdata/crds", "testdata/conversion"), harness.WithSchemeAdders(addGadgets),
			harness.WithWebhooks("testdata/webhook"))
	}
}

// modeKilled re-runs the test binary as one that starts a control plane and is then killed.
const modeKilled = "killed"

// startAndDie starts a plain control plane, prints the addresses of its API server and etcd, and
// kills this process (SIGKILL on Unix): no deferred function, no Stop, as when go test's -timeout ends a
// test binary.
func startAndDie() {
	env, err := harness.Start(context.Background())
	if err != nil {
		fmt.Fprintf(os.Stderr, "start: %v\n", err)
		os.Exit(3)
	}
	fmt.Printf("apiserver %s\netcd %s\n", env.Config.Host, env.ControlPlane.Etcd.URL.String())
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill()
	}
	select {}
}
