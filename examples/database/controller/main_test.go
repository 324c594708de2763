//go:build integration

package controller_test

import (
	"testing"

	"github.com/convergo-dev/convergo/examples/database/api/v1alpha1"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestMain starts a real kube-apiserver and etcd with the Database CRD; each test starts a private
// PostgreSQL server of its own (testing/postgres).
func TestMain(m *testing.M) {
	harness.Main(m,
		harness.WithCRDPaths("../config/crd/bases"),
		harness.WithSchemeAdders(v1alpha1.AddToScheme),
	)
}
