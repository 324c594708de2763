package assets

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func goos() string   { return runtime.GOOS }
func goarch() string { return runtime.GOARCH }

// sampleKubernetesGoMod has the shape of k8s.io/kubernetes' go.mod: staging replaces in a block, other
// replaces, comments, and a single-line replace.
const sampleKubernetesGoMod = `// This is a generated file. Do not edit directly.

module k8s.io/kubernetes

go 1.26.0

require (
	k8s.io/api v0.0.0
	k8s.io/client-go v0.0.0
	github.com/google/go-cmp v0.7.0
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/apimachinery => ./staging/src/k8s.io/apimachinery // staging
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	github.com/some/fork => github.com/other/fork v1.2.3
)

replace k8s.io/kms => ./staging/src/k8s.io/kms

replace example.com/local => ../local
`

func TestKubernetesBuildGoMod(t *testing.T) {
	got, err := kubernetesBuildGoMod([]byte(sampleKubernetesGoMod), "v1.37.0")
	if err != nil {
		t.Fatal(err)
	}
	want := `module convergo.local/k8sbuild

go 1.26.0

require k8s.io/kubernetes v1.37.0

replace (
	k8s.io/api => k8s.io/api v0.37.0
	k8s.io/apimachinery => k8s.io/apimachinery v0.37.0
	k8s.io/client-go => k8s.io/client-go v0.37.0
	k8s.io/kms => k8s.io/kms v0.37.0
)
`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("go.mod (-want +got):\n%s", diff)
	}
}

func TestKubernetesBuildGoModErrors(t *testing.T) {
	cases := map[string]struct {
		gomod   string
		version string
		want    string
	}{
		"no staging replaces": {gomod: "module k8s.io/kubernetes\n\ngo 1.26\n", version: "v1.37.0", want: "no staging replace"},
		"malformed replace":   {gomod: "replace (\n\tk8s.io/api ./staging/src/k8s.io/api\n)\n", version: "v1.37.0", want: "parse go.mod replace"},
		"not a v1 version":    {gomod: sampleKubernetesGoMod, version: "v2.0.0", want: "unsupported kubernetes version"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := kubernetesBuildGoMod([]byte(tc.gomod), tc.version)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestKubernetesLDFlags(t *testing.T) {
	want := "-X k8s.io/component-base/version.gitVersion=v1.37.0 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37" +
		" -X k8s.io/client-go/pkg/version.gitVersion=v1.37.0 -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=37"
	if diff := cmp.Diff(want, kubernetesLDFlags("v1.37.0")); diff != "" {
		t.Errorf("ldflags (-want +got):\n%s", diff)
	}
}

func TestKubernetesImports(t *testing.T) {
	want := []string{
		"k8s.io/kubernetes/cmd/kube-apiserver",
		"k8s.io/kubernetes/cmd/kube-controller-manager",
		"k8s.io/kubernetes/cmd/kube-scheduler",
		"k8s.io/kubernetes/cmd/kubectl",
	}
	if diff := cmp.Diff(want, kubernetesImports()); diff != "" {
		t.Errorf("packages of the k8s.io/kubernetes build module (-want +got):\n%s", diff)
	}
}

func TestVersionCommand(t *testing.T) {
	cases := map[Component]struct {
		args []string
		text string
	}{
		KubeAPIServer:         {args: []string{"--version"}, text: "Kubernetes v1.37.0"},
		KubeControllerManager: {args: []string{"--version"}, text: "Kubernetes v1.37.0"},
		KubeScheduler:         {args: []string{"--version"}, text: "Kubernetes v1.37.0"},
		Etcd:                  {args: []string{"--version"}, text: "Version: 3.7.0"},
		Kwok:                  {args: []string{"--version"}, text: "v0.8.0"},
		Kubectl:               {args: []string{"version", "--client"}, text: "Client Version: v1.37.0"},
		Jaeger:                {args: []string{"version"}, text: `"gitVersion":"v1.75.0"`},
	}
	for c, tc := range cases {
		t.Run(string(c), func(t *testing.T) {
			if diff := cmp.Diff(tc.args, versionArgs(c)); diff != "" {
				t.Errorf("versionArgs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.text, versionText(c)); diff != "" {
				t.Errorf("versionText (-want +got):\n%s", diff)
			}
		})
	}
	if len(cases) != len(AllComponents()) {
		t.Errorf("the table covers %d components, want all %d", len(cases), len(AllComponents()))
	}
}

func TestKwokStages(t *testing.T) {
	dir := t.TempDir()
	for i, rel := range kwokStageFiles {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		content := "kind: Stage\nmetadata:\n  name: s" + string(rune('0'+i)) + "\n"
		if i == 1 {
			content = "---\n" + content + "\n\n" // leading separator and trailing blank lines
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := kwokStages(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "kind: Stage\nmetadata:\n  name: s0\n---\nkind: Stage\nmetadata:\n  name: s1\n---\nkind: Stage\nmetadata:\n  name: s2\n---\nkind: Stage\nmetadata:\n  name: s3\n---\nkind: Stage\nmetadata:\n  name: s4\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("stages (-want +got):\n%s", diff)
	}

	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(kwokStageFiles[2]))); err != nil {
		t.Fatal(err)
	}
	if _, err := kwokStages(dir); err == nil || !strings.Contains(err.Error(), "pod-ready.yaml") {
		t.Errorf("missing stage file: error = %v, want one naming pod-ready.yaml", err)
	}
}

// TestKwokStageFilesExistInModule checks the stage paths against the kwok module when it is in the
// local module cache (it is after a kwok build); it never downloads.
func TestKwokStageFilesExistInModule(t *testing.T) {
	modCache := os.Getenv("GOMODCACHE")
	if modCache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Skip("no home directory")
		}
		modCache = filepath.Join(home, "go", "pkg", "mod")
	}
	dir := filepath.Join(modCache, "sigs.k8s.io", "kwok@"+KwokVersion)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("kwok %s is not in the module cache (%v)", KwokVersion, err)
	}
	if _, err := kwokStages(dir); err != nil {
		t.Error(err)
	}
}
