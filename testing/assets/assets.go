package assets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// Pinned versions of the control-plane components.
const (
	// KubernetesVersion is the version of kube-apiserver, kube-controller-manager and kube-scheduler
	// (module k8s.io/kubernetes).
	KubernetesVersion = "v1.37.0"
	// EtcdVersion is the etcd server version (module go.etcd.io/etcd/server/v3), the one
	// KubernetesVersion's go.mod requires.
	EtcdVersion = "v3.7.0"
	// KwokVersion is the kwok version (module sigs.k8s.io/kwok).
	KwokVersion = "v0.8.0"
	// JaegerVersion is the version of the jaeger trace backend (module github.com/jaegertracing/jaeger,
	// its cmd/jaeger program: the all-in-one Jaeger v2, built on the OpenTelemetry Collector).
	JaegerVersion = "v1.75.0"
)

// EnvAssets is the environment variable naming a directory of prebuilt binaries. It is consulted first,
// as controller-runtime's envtest does.
const EnvAssets = "KUBEBUILDER_ASSETS"

// KwokStagesFile is the name of the kwok stage configuration written next to the kwok binary. Pass it to
// kwok with --config: the standalone kwok binary has no built-in stages.
const KwokStagesFile = "kwok-stages.yaml"

// Component names one control-plane binary. Its string value is the binary's file name.
type Component string

// The components Ensure can provide.
const (
	KubeAPIServer         Component = "kube-apiserver"
	Etcd                  Component = "etcd"
	KubeControllerManager Component = "kube-controller-manager"
	KubeScheduler         Component = "kube-scheduler"
	Kwok                  Component = "kwok"
	// Kubectl is kubectl of KubernetesVersion: what envtest's ControlPlane.KubeCtl() runs from the
	// assets directory. No control plane needs it, so it is never built unless asked for.
	Kubectl Component = "kubectl"
	// Jaeger is the jaeger trace backend: it receives OTLP and answers queries (testing/jaeger starts
	// it). No control plane needs it.
	Jaeger Component = "jaeger"
)

// AllComponents returns every component Ensure can provide, in a stable order: the binaries of a full
// local cluster (ClusterComponents), then kubectl and jaeger. It is what "all" means to
// ParseComponents and `make assets`.
func AllComponents() []Component {
	return append(ClusterComponents(), Kubectl, Jaeger)
}

// ClusterComponents returns the binaries a full local cluster (testing/cluster) runs: kube-apiserver,
// etcd, kube-controller-manager, kube-scheduler and kwok. Ask for these rather than AllComponents when
// kubectl is not needed: its first build takes half a minute more after the Kubernetes components, two
// minutes on its own (2 cores).
func ClusterComponents() []Component {
	return []Component{KubeAPIServer, Etcd, KubeControllerManager, KubeScheduler, Kwok}
}

// DefaultComponents returns what Ensure provides without WithComponents: kube-apiserver and etcd, enough
// for controller-runtime's envtest.
func DefaultComponents() []Component {
	return []Component{KubeAPIServer, Etcd}
}

// ParseComponents parses a comma-separated list of component names, or "all".
func ParseComponents(s string) ([]Component, error) {
	s = strings.TrimSpace(s)
	if s == "all" {
		return AllComponents(), nil
	}
	var out []Component
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		c := Component(part)
		if !slices.Contains(AllComponents(), c) {
			return nil, fmt.Errorf("unknown component %q (known: %s, or all)", part, joinComponents(AllComponents()))
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no components given")
	}
	return out, nil
}

// Version returns the pinned version of c.
func (c Component) Version() string {
	switch c {
	case Etcd:
		return EtcdVersion
	case Kwok:
		return KwokVersion
	case Jaeger:
		return JaegerVersion
	default:
		return KubernetesVersion
	}
}

// Option configures Ensure.
type Option func(*config)

type config struct {
	components []Component
	cacheDir   string
	progress   io.Writer
	// build builds one component into dst (a path in the cache directory). Tests replace it.
	build func(ctx context.Context, b *builder, c Component, dst string) error
}

// WithComponents selects the components to provide (default: kube-apiserver and etcd).
func WithComponents(components ...Component) Option {
	return func(c *config) { c.components = append([]Component(nil), components...) }
}

// WithCacheDir sets the cache directory that receives built binaries (default:
// os.UserCacheDir()/convergo/k8s/<version>-<GOOS>-<GOARCH>).
func WithCacheDir(dir string) Option {
	return func(c *config) { c.cacheDir = dir }
}

// WithProgress sends progress lines (lookups, builds, waits for another process's build) to w.
// The default discards them.
func WithProgress(w io.Writer) Option {
	return func(c *config) {
		if w == nil {
			w = io.Discard
		}
		c.progress = w
	}
}

// platformDir is the per-version, per-platform directory name shared with setup-envtest.
func platformDir() string {
	return strings.TrimPrefix(KubernetesVersion, "v") + "-" + runtime.GOOS + "-" + runtime.GOARCH
}

// DefaultCacheDir returns the directory Ensure builds into when WithCacheDir is not given.
func DefaultCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find user cache directory: %w", err)
	}
	return filepath.Join(base, "convergo", "k8s", platformDir()), nil
}

// SetupEnvtestDir returns the directory where setup-envtest usually installs binaries of
// KubernetesVersion ($XDG_DATA_HOME or ~/.local/share, then kubebuilder-envtest/k8s/<version>-<os>-<arch>).
// It returns "" when no home directory is known.
func SetupEnvtestDir() string {
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return ""
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "kubebuilder-envtest", "k8s", platformDir())
}

// Ensure returns a directory that holds every requested component, building what is missing.
//
// Lookup order: the directory named by KUBEBUILDER_ASSETS if it holds every requested component; the
// cache directory; setup-envtest's usual directory for KubernetesVersion if it holds every requested
// component; otherwise the missing components are built from the Go module proxy into the cache directory
// (several minutes for a Kubernetes binary on the first build). Every binary is run with --version before
// it is trusted. Concurrent calls, also from other processes, are serialised by a file lock in the cache
// directory.
func Ensure(ctx context.Context, opts ...Option) (string, error) {
	cfg := config{progress: io.Discard, build: buildComponent}
	for _, o := range opts {
		o(&cfg)
	}
	if len(cfg.components) == 0 {
		cfg.components = DefaultComponents()
	}
	for _, c := range cfg.components {
		if !slices.Contains(AllComponents(), c) {
			return "", fmt.Errorf("unknown component %q (known: %s)", c, joinComponents(AllComponents()))
		}
	}

	if dir := os.Getenv(EnvAssets); dir != "" {
		missing := absent(dir, cfg.components)
		if len(missing) == 0 {
			for _, c := range cfg.components {
				if _, err := verify(ctx, dir, c, false); err != nil {
					return "", fmt.Errorf("%s=%s holds a %s that does not work (fix or unset %s): %w", EnvAssets, dir, c, EnvAssets, err)
				}
			}
			progressf(cfg.progress, "using %s from %s=%s", joinComponents(cfg.components), EnvAssets, dir)
			return dir, nil
		}
		progressf(cfg.progress, "%s=%s lacks %s; looking elsewhere", EnvAssets, dir, joinComponents(missing))
	}

	cacheDir := cfg.cacheDir
	if cacheDir == "" {
		var err error
		if cacheDir, err = DefaultCacheDir(); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("create cache directory: %w", err)
	}
	unlock, err := lockDir(ctx, cacheDir, cfg.progress)
	if err != nil {
		return "", err
	}
	defer unlock()

	var missing []Component
	for _, c := range cfg.components {
		if _, err := verify(ctx, cacheDir, c, true); err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			if !errors.Is(err, os.ErrNotExist) {
				progressf(cfg.progress, "cached %s is unusable, rebuilding: %v", c, err)
			}
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		progressf(cfg.progress, "using %s from cache %s", joinComponents(cfg.components), cacheDir)
		return cacheDir, nil
	}

	if dir := SetupEnvtestDir(); dir != "" && len(absent(dir, cfg.components)) == 0 {
		ok := true
		for _, c := range cfg.components {
			if _, err := verify(ctx, dir, c, false); err != nil {
				progressf(cfg.progress, "ignoring setup-envtest directory %s: %v", dir, err)
				ok = false
				break
			}
		}
		if ok {
			progressf(cfg.progress, "using %s from setup-envtest directory %s", joinComponents(cfg.components), dir)
			return dir, nil
		}
	}

	b := &builder{cacheDir: cacheDir, progress: cfg.progress, missing: missing}
	if err := b.init(ctx); err != nil {
		return "", err
	}
	for _, c := range missing {
		if err := buildInto(ctx, &cfg, b, cacheDir, c); err != nil {
			return "", err
		}
	}
	return cacheDir, nil
}

// buildInto builds c to a temporary name in dir, verifies it and renames it into place, so that a
// half-written or broken binary never appears under the component's name.
func buildInto(ctx context.Context, cfg *config, b *builder, dir string, c Component) error {
	final := filepath.Join(dir, string(c))
	tmp := filepath.Join(dir, "."+string(c)+".tmp")
	_ = os.Remove(tmp)
	defer os.Remove(tmp)
	progressf(cfg.progress, "building %s %s into %s (several minutes unless the Go build cache holds it)", c, c.Version(), dir)
	if err := cfg.build(ctx, b, c, tmp); err != nil {
		return fmt.Errorf("build %s %s: %w", c, c.Version(), err)
	}
	out, err := runVersion(ctx, tmp, versionArgs(c)...)
	if err != nil {
		return fmt.Errorf("build %s: the new binary does not run: %w", c, err)
	}
	if want := versionText(c); !strings.Contains(out, want) {
		return fmt.Errorf("build %s: the new binary reports %q, want %s", c, firstLine(out), want)
	}
	if c == Kwok {
		stagesTmp := stagesTmpPath(dir)
		defer os.Remove(stagesTmp)
		if err := os.Rename(stagesTmp, filepath.Join(dir, KwokStagesFile)); err != nil {
			return fmt.Errorf("build %s: install stages: %w", c, err)
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("build %s: install: %w", c, err)
	}
	progressf(cfg.progress, "built %s: %s", c, firstLine(out))
	return nil
}

// absent returns the components whose files are missing from dir.
func absent(dir string, components []Component) []Component {
	var missing []Component
	for _, c := range components {
		if slices.ContainsFunc(requiredFiles(dir, c), func(p string) bool { return !isFile(p) }) {
			missing = append(missing, c)
		}
	}
	return missing
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

func joinComponents(cs []Component) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

func progressf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "convergo-assets: "+format+"\n", args...)
}
