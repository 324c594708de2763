//go:build integration

package harness_test

import (
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/convergo-dev/convergo/testing/assets"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestKubectl starts a control plane with WithKubectl and runs the kubectl that testing/assets built
// through envtest's KubeCtl helper: its version and the server's are the pinned Kubernetes version, and
// it lists the namespaces of this API server, a test namespace among them.
func TestKubectl(t *testing.T) {
	env, err := harness.Start(t.Context(), harness.WithKubectl())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	if env.ControlPlane == nil {
		t.Fatal("Env.ControlPlane is nil in plain mode")
	}
	kubectl := env.ControlPlane.KubeCtl()
	if diff := cmp.Diff(env.KubectlPath, kubectl.Path); diff != "" {
		t.Errorf("envtest's kubectl path (-Env.KubectlPath +KubeCtl().Path):\n%s", diff)
	}
	if filepath.Base(kubectl.Path) != string(assets.Kubectl) {
		t.Errorf("kubectl path %s does not name %s", kubectl.Path, assets.Kubectl)
	}
	// kubectl caches discovery under ~/.kube/cache unless told otherwise.
	cacheDir := "--cache-dir=" + t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		stdout, stderr, err := kubectl.Run(append([]string{cacheDir}, args...)...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, readAll(t, stderr))
		}
		return readAll(t, stdout)
	}

	var version struct {
		ClientVersion struct{ GitVersion string } `json:"clientVersion"`
		ServerVersion struct{ GitVersion string } `json:"serverVersion"`
	}
	out := run("version", "--output=json")
	if err := json.Unmarshal([]byte(out), &version); err != nil {
		t.Fatalf("kubectl version --output=json: %v\n%s", err, out)
	}
	if diff := cmp.Diff(assets.KubernetesVersion, version.ClientVersion.GitVersion); diff != "" {
		t.Errorf("kubectl's version (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(assets.KubernetesVersion, version.ServerVersion.GitVersion); diff != "" {
		t.Errorf("the API server's version as kubectl reports it (-want +got):\n%s", diff)
	}

	ns := env.Namespace(t)
	names := strings.Fields(run("get", "namespaces", "--output=name"))
	for _, want := range []string{"namespace/default", "namespace/kube-system", "namespace/" + ns} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("kubectl get namespaces does not list %s; it lists %v", want, names)
		}
	}
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
