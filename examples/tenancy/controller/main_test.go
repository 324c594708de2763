//go:build integration

package controller_test

import (
	"testing"

	"github.com/convergo-dev/convergo/examples/tenancy/api/v1alpha1"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestMain starts the hub: a real kube-apiserver and etcd with the Tenant CRD. Each test starts its
// member clusters, two more kube-apiservers.
func TestMain(m *testing.M) {
	harness.Main(m,
		harness.WithCRDPaths("../config/crd/bases"),
		harness.WithSchemeAdders(v1alpha1.AddToScheme),
	)
}
