package assets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeVersionOutput is what a working fake binary of c prints for --version.
func fakeVersionOutput(c Component) string {
	switch c {
	case Etcd:
		return "etcd Version: 3.7.0\nGit SHA: fake"
	case Kwok:
		return "kwok version v0.8.0 go1.26 (linux/amd64)"
	case Kubectl:
		return "Client Version: v1.37.0\nKustomize Version: v5.8.1"
	case Jaeger:
		return `{"gitCommit":"","gitVersion":"v1.75.0","buildDate":""}`
	default:
		return "Kubernetes v1.37.0"
	}
}

// fakeScript is an executable shell script that prints output (exit code code) when run with the
// arguments that make c report its version, and fails as kubectl does otherwise: kubectl has no
// --version flag.
func fakeScript(c Component, output string, code int) string {
	check := ""
	switch c {
	case Kubectl:
		check = "[ \"$*\" = \"version --client\" ] || { echo 'error: unknown flag: '\"$1\" >&2; exit 1; }\n"
	case Jaeger:
		check = "[ \"$*\" = \"version\" ] || { echo 'Error: unknown flag: '\"$1\" >&2; exit 1; }\n"
	}
	return fmt.Sprintf("#!/bin/sh\n%scat <<'END'\n%s\nEND\nexit %d\n", check, output, code)
}

// writeFake writes a fake binary of c (fakeScript) to path.
func writeFake(t testing.TB, path string, c Component, output string, code int) {
	t.Helper()
	if err := os.WriteFile(path, []byte(fakeScript(c, output, code)), 0o755); err != nil {
		t.Fatal(err)
	}
}

// fillDir puts working fake binaries of components into dir.
func fillDir(t testing.TB, dir string, components ...Component) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range components {
		writeFake(t, filepath.Join(dir, string(c)), c, fakeVersionOutput(c), 0)
		if c == Kwok {
			if err := os.WriteFile(filepath.Join(dir, KwokStagesFile), []byte("kind: Stage\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// fakeBuilds records the builds a test's Ensure calls perform.
type fakeBuilds struct {
	mu    sync.Mutex
	built []Component
	delay time.Duration
	fail  map[Component]error
}

func (f *fakeBuilds) option() Option {
	return func(c *config) {
		c.build = func(ctx context.Context, b *builder, comp Component, dst string) error {
			f.mu.Lock()
			f.built = append(f.built, comp)
			err := f.fail[comp]
			f.mu.Unlock()
			time.Sleep(f.delay)
			if err != nil {
				return err
			}
			if err := os.WriteFile(dst, []byte(fakeScript(comp, fakeVersionOutput(comp), 0)), 0o755); err != nil {
				return err
			}
			if comp == Kwok {
				return os.WriteFile(stagesTmpPath(filepath.Dir(dst)), []byte("kind: Stage\n"), 0o644)
			}
			return nil
		}
	}
}

func (f *fakeBuilds) components() []Component {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.built)
	slices.Sort(out)
	return out
}

// isolate points every lookup location at empty temporary directories and returns them.
func isolate(t *testing.T) (kubebuilderAssets, cache, setupEnvtest string) {
	t.Helper()
	root := t.TempDir()
	t.Setenv(EnvAssets, "")
	t.Setenv("XDG_DATA_HOME", filepath.Join(root, "data"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(root, "usercache"))
	return filepath.Join(root, "kubebuilder-assets"), filepath.Join(root, "cache"), SetupEnvtestDir()
}

func TestEnsureLookupOrder(t *testing.T) {
	all := AllComponents()
	defaults := DefaultComponents()
	cases := map[string]struct {
		components    []Component
		assetsEnv     []Component // fakes in KUBEBUILDER_ASSETS (nil: variable unset)
		cache         []Component
		setupEnvtest  []Component
		wantDir       string // "assets", "cache" or "setup-envtest"
		wantBuilt     []Component
		badInCache    []Component // cached binaries reporting a wrong version
		brokenInCache []Component // cached binaries that fail to run
	}{
		"KUBEBUILDER_ASSETS holding everything wins": {
			components: defaults, assetsEnv: defaults, cache: defaults, setupEnvtest: defaults, wantDir: "assets",
		},
		"KUBEBUILDER_ASSETS lacking a component is skipped": {
			components: all, assetsEnv: defaults, cache: all, wantDir: "cache",
		},
		"cache before setup-envtest": {
			components: defaults, cache: defaults, setupEnvtest: defaults, wantDir: "cache",
		},
		"setup-envtest when the cache lacks something": {
			components: defaults, cache: []Component{Etcd}, setupEnvtest: defaults, wantDir: "setup-envtest",
		},
		"setup-envtest lacking a component is skipped and only the missing are built": {
			components: all, cache: []Component{KubeAPIServer, Etcd}, setupEnvtest: defaults,
			wantDir: "cache", wantBuilt: []Component{Jaeger, KubeControllerManager, KubeScheduler, Kwok, Kubectl},
		},
		"nothing anywhere builds the requested components only": {
			components: defaults, wantDir: "cache", wantBuilt: []Component{Etcd, KubeAPIServer},
		},
		"wrong version in cache is rebuilt": {
			components: defaults, cache: []Component{Etcd}, badInCache: []Component{KubeAPIServer},
			wantDir: "cache", wantBuilt: []Component{KubeAPIServer},
		},
		"broken binary in cache is rebuilt": {
			components: defaults, cache: []Component{KubeAPIServer}, brokenInCache: []Component{Etcd},
			wantDir: "cache", wantBuilt: []Component{Etcd},
		},
		"cache holding everything, kubectl answering version --client": {
			components: all, cache: all, wantDir: "cache",
		},
		"kubectl missing from the cache is built alone": {
			components: all, cache: append(ClusterComponents(), Jaeger), wantDir: "cache", wantBuilt: []Component{Kubectl},
		},
		"jaeger missing from the cache is built alone": {
			components: all, cache: append(ClusterComponents(), Kubectl), wantDir: "cache", wantBuilt: []Component{Jaeger},
		},
		"jaeger of another version in the cache is rebuilt": {
			components: []Component{Jaeger}, badInCache: []Component{Jaeger}, wantDir: "cache", wantBuilt: []Component{Jaeger},
		},
		"kubectl of another version in the cache is rebuilt": {
			components: []Component{KubeAPIServer, Etcd, Kubectl}, cache: defaults, badInCache: []Component{Kubectl},
			wantDir: "cache", wantBuilt: []Component{Kubectl},
		},
		"setup-envtest's directory with kubectl serves a request for kubectl": {
			components: []Component{KubeAPIServer, Etcd, Kubectl}, cache: defaults,
			setupEnvtest: []Component{KubeAPIServer, Etcd, Kubectl}, wantDir: "setup-envtest",
		},
		"kwok without its stages file is rebuilt": {
			components: []Component{Kwok}, wantDir: "cache", wantBuilt: []Component{Kwok},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assetsDir, cacheDir, setupDir := isolate(t)
			if tc.assetsEnv != nil {
				fillDir(t, assetsDir, tc.assetsEnv...)
				t.Setenv(EnvAssets, assetsDir)
			}
			fillDir(t, cacheDir, tc.cache...)
			for _, c := range tc.badInCache {
				writeFake(t, filepath.Join(cacheDir, string(c)), c, "Kubernetes v1.30.0", 0)
			}
			for _, c := range tc.brokenInCache {
				writeFake(t, filepath.Join(cacheDir, string(c)), c, "segfault", 1)
			}
			if tc.components[0] == Kwok {
				writeFake(t, filepath.Join(cacheDir, string(Kwok)), Kwok, fakeVersionOutput(Kwok), 0) // binary without stages
			}
			if tc.setupEnvtest != nil {
				fillDir(t, setupDir, tc.setupEnvtest...)
			}
			builds := &fakeBuilds{}
			dir, err := Ensure(t.Context(), WithComponents(tc.components...), WithCacheDir(cacheDir), builds.option())
			if err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			want := map[string]string{"assets": assetsDir, "cache": cacheDir, "setup-envtest": setupDir}[tc.wantDir]
			if diff := cmp.Diff(want, dir); diff != "" {
				t.Errorf("directory (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(sorted(tc.wantBuilt), builds.components()); diff != "" {
				t.Errorf("built (-want +got):\n%s", diff)
			}
			if missing := absent(dir, tc.components); len(missing) != 0 {
				t.Errorf("returned directory lacks %v", missing)
			}
		})
	}
}

func sorted(cs []Component) []Component {
	out := slices.Clone(cs)
	slices.Sort(out)
	return out
}

func TestEnsureRejectsBadKubebuilderAssets(t *testing.T) {
	assetsDir, cacheDir, _ := isolate(t)
	fillDir(t, assetsDir, Etcd)
	writeFake(t, filepath.Join(assetsDir, string(KubeAPIServer)), KubeAPIServer, "exec format error", 126)
	t.Setenv(EnvAssets, assetsDir)
	builds := &fakeBuilds{}
	_, err := Ensure(t.Context(), WithCacheDir(cacheDir), builds.option())
	if err == nil {
		t.Fatal("Ensure accepted a kube-apiserver that fails --version")
	}
	for _, want := range []string{EnvAssets + "=" + assetsDir, "kube-apiserver", "exec format error"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if got := builds.components(); len(got) != 0 {
		t.Errorf("built %v, want nothing", got)
	}
}

func TestEnsureAcceptsOtherVersionsOutsideTheCache(t *testing.T) {
	// setup-envtest ships its own etcd version; only our cache insists on the pinned versions.
	_, cacheDir, setupDir := isolate(t)
	fillDir(t, setupDir, KubeAPIServer)
	writeFake(t, filepath.Join(setupDir, string(Etcd)), Etcd, "etcd Version: 3.5.21", 0)
	dir, err := Ensure(t.Context(), WithCacheDir(cacheDir), (&fakeBuilds{}).option())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(setupDir, dir); diff != "" {
		t.Errorf("directory (-want +got):\n%s", diff)
	}
}

func TestEnsureBuildFailure(t *testing.T) {
	_, cacheDir, _ := isolate(t)
	builds := &fakeBuilds{fail: map[Component]error{Etcd: errors.New("compile error in etcd")}}
	_, err := Ensure(t.Context(), WithCacheDir(cacheDir), builds.option())
	if err == nil || !strings.Contains(err.Error(), "compile error in etcd") {
		t.Fatalf("Ensure error = %v, want the build error", err)
	}
	if _, err := os.Stat(filepath.Join(cacheDir, string(Etcd))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed build left %s in the cache (stat: %v)", Etcd, err)
	}
}

func TestEnsureRejectsBuiltBinaryWithWrongVersion(t *testing.T) {
	_, cacheDir, _ := isolate(t)
	wrong := func(c *config) {
		c.build = func(ctx context.Context, b *builder, comp Component, dst string) error {
			return os.WriteFile(dst, []byte("#!/bin/sh\necho 'Kubernetes v0.0.0-master+$Format:%H$'\n"), 0o755)
		}
	}
	_, err := Ensure(t.Context(), WithComponents(KubeAPIServer), WithCacheDir(cacheDir), wrong)
	if err == nil || !strings.Contains(err.Error(), "v0.0.0-master") {
		t.Fatalf("Ensure error = %v, want a version mismatch", err)
	}
	entries, _ := os.ReadDir(cacheDir)
	for _, e := range entries {
		if e.Name() != ".lock" {
			t.Errorf("cache holds %s after a rejected build", e.Name())
		}
	}
}

func TestEnsureConcurrentCallsBuildOnce(t *testing.T) {
	_, cacheDir, _ := isolate(t)
	builds := &fakeBuilds{delay: 50 * time.Millisecond}
	const callers = 6
	dirs := make([]string, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			dirs[i], errs[i] = Ensure(t.Context(), WithComponents(AllComponents()...), WithCacheDir(cacheDir), builds.option())
		})
	}
	wg.Wait()
	for i := range callers {
		if errs[i] != nil {
			t.Errorf("caller %d: %v", i, errs[i])
		}
		if dirs[i] != cacheDir {
			t.Errorf("caller %d got %q, want %q", i, dirs[i], cacheDir)
		}
	}
	if diff := cmp.Diff(sorted(AllComponents()), builds.components()); diff != "" {
		t.Errorf("builds (-want +got): each component must be built exactly once:\n%s", diff)
	}
}

func TestEnsureLockWaitHonoursContext(t *testing.T) {
	_, cacheDir, _ := isolate(t)
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockDir(t.Context(), cacheDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var progress strings.Builder
	_, err = Ensure(ctx, WithCacheDir(cacheDir), WithProgress(&progress), (&fakeBuilds{}).option())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Ensure error = %v, want context.Canceled", err)
	}
	if !strings.Contains(progress.String(), "waiting for") {
		t.Errorf("progress %q does not say it waits for the lock", progress.String())
	}
}

func TestEnsureWithoutGo(t *testing.T) {
	_, cacheDir, _ := isolate(t)
	t.Setenv("PATH", t.TempDir())
	_, err := Ensure(t.Context(), WithCacheDir(cacheDir))
	if err == nil {
		t.Fatal("Ensure succeeded without a go command")
	}
	for _, want := range []string{"install Go 1.26+", EnvAssets + "="} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestEnsureUnknownComponent(t *testing.T) {
	_, cacheDir, _ := isolate(t)
	_, err := Ensure(t.Context(), WithComponents("kubelet"), WithCacheDir(cacheDir))
	if err == nil || !strings.Contains(err.Error(), `"kubelet"`) {
		t.Errorf("Ensure error = %v, want an unknown component error", err)
	}
}

func TestDefaultLocations(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/x/cache")
	t.Setenv("XDG_DATA_HOME", "/x/data")
	got, err := DefaultCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	suffix := "1.37.0-" + goos() + "-" + goarch()
	if diff := cmp.Diff("/x/cache/convergo/k8s/"+suffix, got); diff != "" {
		t.Errorf("DefaultCacheDir (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("/x/data/kubebuilder-envtest/k8s/"+suffix, SetupEnvtestDir()); diff != "" {
		t.Errorf("SetupEnvtestDir (-want +got):\n%s", diff)
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/u")
	if diff := cmp.Diff("/home/u/.local/share/kubebuilder-envtest/k8s/"+suffix, SetupEnvtestDir()); diff != "" {
		t.Errorf("SetupEnvtestDir without XDG_DATA_HOME (-want +got):\n%s", diff)
	}
}

func TestComponentSets(t *testing.T) {
	if diff := cmp.Diff([]Component{KubeAPIServer, Etcd, KubeControllerManager, KubeScheduler, Kwok}, ClusterComponents()); diff != "" {
		t.Errorf("ClusterComponents (-want +got): a full cluster runs these five and needs no kubectl:\n%s", diff)
	}
	if diff := cmp.Diff(append(ClusterComponents(), Kubectl, Jaeger), AllComponents()); diff != "" {
		t.Errorf("AllComponents (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Component{KubeAPIServer, Etcd}, DefaultComponents()); diff != "" {
		t.Errorf("DefaultComponents (-want +got):\n%s", diff)
	}
	for _, c := range AllComponents() {
		want := KubernetesVersion
		switch c {
		case Etcd:
			want = EtcdVersion
		case Kwok:
			want = KwokVersion
		case Jaeger:
			want = JaegerVersion
		}
		if got := c.Version(); got != want {
			t.Errorf("%s.Version() = %s, want %s", c, got, want)
		}
	}
}

func TestParseComponents(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    []Component
		wantErr bool
	}{
		"all":          {in: "all", want: AllComponents()},
		"list":         {in: "kube-apiserver, etcd", want: []Component{KubeAPIServer, Etcd}},
		"duplicates":   {in: "etcd,etcd,kwok", want: []Component{Etcd, Kwok}},
		"unknown":      {in: "etcd,kubelet", wantErr: true},
		"empty":        {in: " , ", wantErr: true},
		"single":       {in: "kube-scheduler", want: []Component{KubeScheduler}},
		"kubectl":      {in: "kube-apiserver,etcd,kubectl", want: []Component{KubeAPIServer, Etcd, Kubectl}},
		"all is alone": {in: "all,etcd", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseComponents(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseComponents(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseComponents(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}
