package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/testing/assets"
	"github.com/convergo-dev/convergo/testing/cluster"
)

// Timeouts of the control plane. The machine running tests is often loaded, so they are generous.
const (
	componentStartTimeout = 90 * time.Second
	componentStopTimeout  = 30 * time.Second
	crdEstablishTimeout   = 90 * time.Second
)

// Env is a running control plane: a real kube-apiserver and etcd (and, with WithFullCluster, a
// controller-manager, a scheduler and kwok nodes).
type Env struct {
	// Config is the admin configuration of the API server.
	Config *rest.Config
	// Client is an uncached client using Scheme.
	Client client.Client
	// Scheme holds the client-go types, apiextensions/v1 and whatever WithSchemeAdders added.
	Scheme *runtime.Scheme
	// KubeconfigPath is the path of an admin kubeconfig file for the run (for kubectl or a process
	// under test).
	KubeconfigPath string
	// RunDir is a directory for the run's files, removed by Stop.
	RunDir string
	// CRDs are the CustomResourceDefinitions installed from WithCRDPaths.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// ControlPlane is envtest's control plane in plain mode, nil with WithFullCluster. With WithKubectl
	// its KubeCtl() runs kubectl against the API server as an admin:
	//
	//	stdout, stderr, err := env.ControlPlane.KubeCtl().Run("get", "namespaces")
	//
	// and AddUser provisions users with other names and groups.
	ControlPlane *envtest.ControlPlane
	// KubectlPath is the kubectl binary (assets.Kubectl, of assets.KubernetesVersion) with WithKubectl,
	// "" otherwise. Run it with --kubeconfig=KubeconfigPath.
	KubectlPath string
	// Webhooks are the webhook configurations WithWebhooks installed and where they send the API
	// server's calls (LocalServingHost, LocalServingPort, LocalServingCertDir, LocalServingCAData); nil
	// without WithWebhooks. WebhookOptions turns them into a webhook server's options.
	Webhooks *envtest.WebhookInstallOptions

	// servesWebhooks: the environment serves the webhooks itself (WithWebhookServer).
	servesWebhooks bool

	cluster  *cluster.Cluster
	stopOnce sync.Once
	stopErr  error
	stopFns  []func() error
	logTails func(lines int) string
}

// Option configures Start and Main.
type Option func(*config)

type config struct {
	crdPaths     []string
	adders       []func(*runtime.Scheme) error
	assetOpts    []assets.Option
	fullCluster  *fullClusterConfig
	kubectl      bool
	webhookPaths []string
	webhookSetup func(manager.Manager) error
}

// WithCRDPaths installs the CustomResourceDefinitions in the given directories or files (YAML or JSON)
// and waits until they are established and served. A path that does not exist is an error.
func WithCRDPaths(paths ...string) Option {
	return func(c *config) { c.crdPaths = append(c.crdPaths, paths...) }
}

// WithSchemeAdders adds types to the environment's scheme, e.g. an API package's AddToScheme.
func WithSchemeAdders(adders ...func(*runtime.Scheme) error) Option {
	return func(c *config) { c.adders = append(c.adders, adders...) }
}

// WithAssetOptions passes options to assets.Ensure, which locates or builds the control-plane binaries
// (e.g. assets.WithProgress(os.Stderr) to watch a first build).
func WithAssetOptions(opts ...assets.Option) Option {
	return func(c *config) { c.assetOpts = append(c.assetOpts, opts...) }
}

// WithKubectl provides kubectl of the control plane's version next to the other binaries (built by
// assets.Ensure on first use, up to two minutes once) and sets Env.KubectlPath; in plain mode envtest's
// ControlPlane.KubeCtl() then runs it.
func WithKubectl() Option {
	return func(c *config) { c.kubectl = true }
}

// assetOptions returns the options for assets.Ensure: the components (and kubectl with WithKubectl),
// progress lines on stderr once a build (or a wait for another process's build) starts, then the
// caller's options.
func (c *config) assetOptions(components []assets.Component) []assets.Option {
	components = slices.Clone(components)
	if c.kubectl && !slices.Contains(components, assets.Kubectl) {
		components = append(components, assets.Kubectl)
	}
	return append([]assets.Option{
		assets.WithComponents(components...),
		assets.WithProgress(&buildProgress{w: os.Stderr}),
	}, c.assetOpts...)
}

// buildProgress forwards progress lines only from the first line about a build or a wait on, so that
// a first run explains its minutes of silence and later runs print nothing.
type buildProgress struct {
	w      io.Writer
	active bool
}

// Write implements io.Writer.
func (p *buildProgress) Write(b []byte) (int, error) {
	if !p.active {
		line := string(b)
		p.active = strings.Contains(line, ": building ") || strings.Contains(line, ": waiting for ")
	}
	if p.active {
		return p.w.Write(b)
	}
	return len(b), nil
}

// NewScheme returns a scheme with the client-go types, apiextensions/v1 and the given adders.
func NewScheme(adders ...func(*runtime.Scheme) error) (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	all := append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme}, adders...)
	for i, add := range all {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("build scheme: adder %d: %w", i, err)
		}
	}
	return s, nil
}

// Start starts a control plane: kube-apiserver and etcd through controller-runtime's envtest, with
// binaries from assets.Ensure (built from the Go module proxy on first use), or a full local cluster with
// WithFullCluster. It installs the CRDs of WithCRDPaths and the webhook configurations of
// WithWebhooks, and writes an admin kubeconfig. Call Stop when done; in TestMain use Main instead.
func Start(ctx context.Context, opts ...Option) (*Env, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	scheme, err := NewScheme(cfg.adders...)
	if err != nil {
		return nil, err
	}
	runDir, err := os.MkdirTemp("", "convergo-harness-")
	if err != nil {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	e := &Env{Scheme: scheme, RunDir: runDir}
	e.stopFns = append(e.stopFns, func() error { return os.RemoveAll(runDir) })

	var startErr error
	if cfg.fullCluster != nil {
		startErr = e.startFullCluster(ctx, &cfg)
	} else {
		startErr = e.startEnvtest(ctx, &cfg)
	}
	if startErr == nil {
		startErr = e.install(&cfg)
	}
	if startErr == nil {
		startErr = e.finish()
	}
	if startErr == nil {
		startErr = e.serveWebhooks(ctx, &cfg)
	}
	if startErr != nil {
		if err := e.Stop(); err != nil {
			startErr = fmt.Errorf("%w (and stopping what had started: %v)", startErr, err)
		}
		return nil, startErr
	}
	return e, nil
}

func (e *Env) startEnvtest(ctx context.Context, cfg *config) error {
	dir, err := assets.Ensure(ctx, cfg.assetOptions(assets.DefaultComponents())...)
	if err != nil {
		return fmt.Errorf("locate control-plane binaries: %w", err)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: dir,
		ControlPlane: envtest.ControlPlane{
			APIServer: &envtest.APIServer{Path: filepath.Join(dir, string(assets.KubeAPIServer))},
			Etcd:      &envtest.Etcd{Path: filepath.Join(dir, string(assets.Etcd))},
		},
		Scheme: e.Scheme,
		// No CRDs or webhooks here: install adds them, as in full-cluster mode, so that a CRD's
		// conversion webhook is pointed at the test's server only with WithWebhooks (envtest would
		// point convertible kinds at a port nobody serves).
		UseExistingCluster:       ptr.To(false),
		ControlPlaneStartTimeout: componentStartTimeout,
		ControlPlaneStopTimeout:  componentStopTimeout,
	}
	if cfg.kubectl {
		// As for the API server and etcd: the directory Ensure chose, not $KUBEBUILDER_ASSETS, which
		// envtest would prefer and which may lack kubectl.
		env.ControlPlane.KubectlPath = filepath.Join(dir, string(assets.Kubectl))
	}
	guard, err := newChildGuard(dir)
	if err != nil {
		return fmt.Errorf("guard the control plane against this process's death: %w", err)
	}
	restCfg, err := env.Start()
	// Stop whatever started, even when Start failed half-way.
	e.stopFns = append(e.stopFns, func() error {
		if err := env.Stop(); err != nil {
			return fmt.Errorf("stop envtest: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("start envtest (kube-apiserver and etcd from %s): %w", dir, err)
	}
	disarm, err := guard.arm()
	if err != nil {
		return fmt.Errorf("guard the control plane against this process's death: %w", err)
	}
	e.stopFns = append(e.stopFns, disarm)
	e.Config = restCfg
	e.ControlPlane = &env.ControlPlane
	if cfg.kubectl {
		e.KubectlPath = filepath.Join(dir, string(assets.Kubectl))
	}
	e.KubeconfigPath = filepath.Join(e.RunDir, "kubeconfig")
	if err := os.WriteFile(e.KubeconfigPath, env.KubeConfig, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// install installs the CRDs of WithCRDPaths and the webhook configurations of WithWebhooks on the
// running control plane, in the order envtest.Environment.Start uses: the webhooks' certificates and
// port first, so that the CRDs' conversion webhooks can point at them, then the CRDs, then the webhook
// configurations.
func (e *Env) install(cfg *config) error {
	hooks := cfg.webhookInstallOptions()
	if len(cfg.webhookPaths) > 0 {
		e.stopFns = append(e.stopFns, hooks.Cleanup)
		if err := hooks.PrepWithoutInstalling(); err != nil {
			return fmt.Errorf("prepare webhooks: %w", err)
		}
	}
	if len(cfg.crdPaths) > 0 {
		crds, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{
			Paths:              slices.Clone(cfg.crdPaths),
			Scheme:             e.Scheme,
			ErrorIfPathMissing: true,
			MaxTime:            crdEstablishTimeout,
			WebhookOptions:     hooks,
		})
		if err != nil {
			return fmt.Errorf("install CRDs: %w", err)
		}
		e.CRDs = crds
	}
	if len(cfg.webhookPaths) > 0 {
		if err := hooks.Install(e.Config); err != nil {
			return fmt.Errorf("install webhooks: %w", err)
		}
		e.Webhooks = &hooks
	}
	return nil
}

// finish builds the client and waits for the installed CRDs to be established.
func (e *Env) finish() error {
	c, err := client.New(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	e.Client = c
	return waitEstablished(c, e.CRDs)
}

// waitEstablished waits until every CRD reports Established=True.
func waitEstablished(c client.Client, crds []*apiextensionsv1.CustomResourceDefinition) error {
	ctx, cancel := context.WithTimeout(context.Background(), crdEstablishTimeout)
	defer cancel()
	for _, crd := range crds {
		var last string
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			var live apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, &live); err != nil {
				last = err.Error()
				return false, nil
			}
			for _, cond := range live.Status.Conditions {
				if cond.Type == apiextensionsv1.Established {
					last = fmt.Sprintf("Established=%s %s: %s", cond.Status, cond.Reason, cond.Message)
					return cond.Status == apiextensionsv1.ConditionTrue, nil
				}
			}
			last = "no Established condition yet"
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("wait for CRD %s to be established (last: %s): %w", crd.Name, last, err)
		}
	}
	return nil
}

// Stop stops the control plane and removes the run directory. It is safe to call more than once; every
// call returns the first call's result.
func (e *Env) Stop() error {
	if e == nil {
		return nil
	}
	e.stopOnce.Do(func() {
		var errs []error
		for i := len(e.stopFns) - 1; i >= 0; i-- {
			if err := e.stopFns[i](); err != nil {
				errs = append(errs, err)
			}
		}
		e.stopErr = errors.Join(errs...)
	})
	return e.stopErr
}

// ClientFor returns an uncached client with the environment's scheme that sends its requests through
// cfg, e.g. a config wrapped by a RequestCounter or by fakes.InjectFaults. It fails the test when the
// client cannot be built.
func (e *Env) ClientFor(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatalf("create client: %v", err)
	}
	return c
}

// LogTails returns the last lines of every control-plane component's log in full-cluster mode, and ""
// in plain mode (envtest does not keep the logs).
func (e *Env) LogTails(lines int) string {
	if e == nil || e.logTails == nil {
		return ""
	}
	return e.logTails(lines)
}
