//go:build integration

package deploy

import (
	"testing"

	memcachedv1alpha1 "github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	welcomev1alpha1 "github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestMain starts a real kube-apiserver and etcd with no CRD installed: the tests apply the examples'
// manifests, their CRDs among them, as a deploy does. TestDeployAndUndeploy starts a full cluster of
// its own.
func TestMain(m *testing.M) {
	harness.Main(m, harness.WithSchemeAdders(memcachedv1alpha1.AddToScheme, welcomev1alpha1.AddToScheme))
}
