package harness_test

import (
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
