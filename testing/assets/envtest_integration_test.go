//go:build integration

package assets_test

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/convergo-dev/convergo/testing/assets"
)

// TestEnvtestFindsEverythingInTheDirectory gives envtest nothing but the directory Ensure returns, as
// one gives it setup-envtest's, and runs kube-apiserver, etcd and, through envtest's KubeCtl helper,
// kubectl from it.
func TestEnvtestFindsEverythingInTheDirectory(t *testing.T) {
	dir, err := assets.Ensure(t.Context(), assets.WithComponents(assets.KubeAPIServer, assets.Etcd, assets.Kubectl), assets.WithProgress(testLog{t}))
	if err != nil {
		t.Fatal(err)
	}
	// envtest prefers these variables to the directory it is given.
	for _, v := range []string{assets.EnvAssets, "TEST_ASSET_KUBE_APISERVER", "TEST_ASSET_ETCD", "TEST_ASSET_KUBECTL"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    dir,
		ControlPlaneStartTimeout: 90 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	if _, err := env.Start(); err != nil {
		t.Fatalf("start envtest with binaries from %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})
	stdout, stderr, err := env.ControlPlane.KubeCtl().Run("--cache-dir="+t.TempDir(), "get", "namespaces", "--output=name")
	errOut, _ := io.ReadAll(stderr)
	if err != nil {
		t.Fatalf("kubectl get namespaces through envtest's KubeCtl, binaries from %s: %v\n%s", dir, err, errOut)
	}
	out, _ := io.ReadAll(stdout)
	if !strings.Contains(string(out), "namespace/default\n") {
		t.Errorf("kubectl get namespaces lists no default namespace:\n%s%s", out, errOut)
	}
}

// testLog writes to the test's log (a first build explains its minutes there, with -v or on failure).
type testLog struct{ t *testing.T }

// Write implements io.Writer.
func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
