//go:build integration

package controller_test

import (
	"testing"

	"github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestMain starts a real kube-apiserver and etcd with the Memcached CRD. There is no controller-manager,
// kubelet or garbage collector: the tests report Deployments available themselves
// (optest.MarkDeploymentAvailable) and check that the operator deletes its children itself.
func TestMain(m *testing.M) {
	harness.Main(m,
		harness.WithCRDPaths("../config/crd/bases"),
		harness.WithSchemeAdders(v1alpha1.AddToScheme),
	)
}
