//go:build integration

package v1alpha1_test

import (
	"testing"

	"github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestMain starts a real kube-apiserver and etcd with the committed Memcached CRD installed.
func TestMain(m *testing.M) {
	harness.Main(m,
		harness.WithCRDPaths("../../config/crd/bases"),
		harness.WithSchemeAdders(v1alpha1.AddToScheme),
	)
}
