//go:build integration

package bench

import (
	"testing"

	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestMain starts a real kube-apiserver and etcd (plain mode) with the Welcome CRD installed.
func TestMain(m *testing.M) {
	harness.Main(m,
		harness.WithCRDPaths("../examples/welcome/config/crd/bases"),
		harness.WithSchemeAdders(v1alpha1.AddToScheme),
	)
}
