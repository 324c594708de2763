//go:build integration

package reliability_test

import (
	"testing"
	"time"

	"github.com/convergo-dev/convergo/examples/internal/reliability"
	"github.com/convergo-dev/convergo/testing/cluster"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestMain starts one full local cluster for the package (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok with two fake nodes), so that Deployments really
// become available, pods are really admitted, and garbage collection is real.
func TestMain(m *testing.M) {
	harness.Main(m,
		harness.WithFullCluster(cluster.WithNodes(2),
			// As hardened clusters do: setting blockOwnerDeletion on a child's owner reference needs
			// "update" on the owner's finalizers (TestRBACRoleSufficientAndMinimal checks it).
			cluster.WithExtraArgs(cluster.APIServer, "--enable-admission-plugins=OwnerReferencesPermissionEnforcement")),
		harness.WithCRDPaths(reliability.CRDDirs()...),
		harness.WithSchemeAdders(reliability.SchemeAdders...),
	)
}

// convergeTimeout bounds every wait for convergence; the machine running the tests is often loaded.
const convergeTimeout = 4 * time.Minute
