package operator

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Flags are the command-line options every operator takes. Bind registers them with their defaults; a
// test may fill one in directly (the zero value serves nothing and elects no leader).
type Flags struct {
	// MetricsAddr is --metrics-bind-address: where the metrics endpoint listens; "0" (the default)
	// turns it off.
	MetricsAddr string
	// InsecureMetrics is the opposite of --metrics-secure (default true): serve metrics over plain HTTP
	// to anyone, instead of HTTPS to callers the API server authenticates and authorizes.
	InsecureMetrics bool
	// ProbeAddr is --health-probe-bind-address (default ":8081"): where /healthz and /readyz listen;
	// "0" or empty turns them off.
	ProbeAddr string
	// LeaderElect is --leader-elect: only the replica holding the Lease reconciles.
	LeaderElect bool
	// LeaderElectionNamespace is --leader-election-namespace: the Lease's namespace (default: the pod's;
	// required outside a cluster).
	LeaderElectionNamespace string
	// PprofAddr is --pprof-bind-address: where the Go profiler's endpoints listen; empty (the default)
	// turns them off.
	PprofAddr string
	// MaxConcurrentReconciles is --max-concurrent-reconciles: how many objects each controller
	// reconciles at once; 0 (the default) leaves it to the controller (Convergo's Reconciler: 4).
	MaxConcurrentReconciles int
	// Webhook is --webhook-port (default 9443) and --webhook-cert-path: the webhook server's port and
	// the directory of its tls.crt and tls.key. The server runs only when a webhook is registered.
	Webhook webhook.Options
	// Zap are the logger's flags (--zap-log-level, --zap-devel, ...).
	Zap zap.Options
}

// Bind registers the standard flags on fs, with their defaults, to land in f once fs is parsed.
func (f *Flags) Bind(fs *flag.FlagSet) {
	fs.StringVar(&f.MetricsAddr, "metrics-bind-address", "0", `Address of the metrics endpoint, e.g. ":8443"; "0" turns it off.`)
	fs.BoolFunc("metrics-secure", "Serve metrics over HTTPS, to callers authenticated and authorized by the API server (default true).", func(s string) error {
		secure, err := parseBool(s)
		f.InsecureMetrics = !secure
		return err
	})
	fs.StringVar(&f.ProbeAddr, "health-probe-bind-address", ":8081", `Address of the /healthz and /readyz endpoints; "0" turns them off.`)
	fs.BoolVar(&f.LeaderElect, "leader-elect", false, "Elect a leader, so that only one of several replicas reconciles.")
	fs.StringVar(&f.LeaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader election Lease (default: the pod's namespace; required outside a cluster).")
	fs.StringVar(&f.PprofAddr, "pprof-bind-address", "", `Address of the Go profiler's endpoints (/debug/pprof), e.g. "127.0.0.1:6060"; empty turns them off.`)
	fs.IntVar(&f.MaxConcurrentReconciles, "max-concurrent-reconciles", 0, "How many objects each controller reconciles at once (0: the controller's default, 4 for Convergo's).")
	fs.IntVar(&f.Webhook.Port, "webhook-port", webhook.DefaultPort, "Port of the webhook server.")
	fs.StringVar(&f.Webhook.CertDir, "webhook-cert-path", "", "Directory of the webhook server's tls.crt and tls.key.")
	f.Zap.BindFlags(fs)
}

// parseBool parses a boolean flag's value as the flag package does.
func parseBool(s string) (bool, error) {
	switch s {
	case "1", "t", "T", "true", "TRUE", "True":
		return true, nil
	case "0", "f", "F", "false", "FALSE", "False":
		return false, nil
	}
	return false, fmt.Errorf("parse %q as a boolean", s)
}

// NewManager creates the manager the flags describe, for the cluster of the kubeconfig (ctrl.GetConfig:
// --kubeconfig, $KUBECONFIG, the in-cluster config, ~/.kube/config): a scheme of client-go's kinds and
// those addToScheme adds, the metrics, probe and profiler endpoints, leader election through Lease
// leaderElectionID (released when the manager stops), the controllers' workers, the webhook server,
// and cacheOptions (nil: none) applied to the cache options, such as a controller package's
// CacheOptions.
func (f *Flags) NewManager(leaderElectionID string, cacheOptions func(*cache.Options), addToScheme ...func(*runtime.Scheme) error) (manager.Manager, error) {
	opts, err := f.options(leaderElectionID, addToScheme...)
	if err != nil {
		return nil, err
	}
	if cacheOptions != nil {
		cacheOptions(&opts.Cache)
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	return mgr, nil
}

// options returns the manager options the flags give (see NewManager).
func (f *Flags) options(leaderElectionID string, addToScheme ...func(*runtime.Scheme) error) (ctrl.Options, error) {
	scheme := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, addToScheme...) {
		if err := add(scheme); err != nil {
			return ctrl.Options{}, fmt.Errorf("build scheme: %w", err)
		}
	}
	metrics := metricsserver.Options{BindAddress: cmp.Or(f.MetricsAddr, "0"), SecureServing: !f.InsecureMetrics}
	if metrics.SecureServing {
		metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metrics,
		HealthProbeBindAddress:        f.ProbeAddr,
		PprofBindAddress:              f.PprofAddr,
		LeaderElection:                f.LeaderElect,
		LeaderElectionID:              leaderElectionID,
		LeaderElectionNamespace:       f.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{MaxConcurrentReconciles: f.MaxConcurrentReconciles},
		WebhookServer:                 webhook.NewServer(f.Webhook),
	}, nil
}

// Main sets controller-runtime's logger from the flags, runs run with a context that ends on SIGTERM
// or SIGINT, and exits with status 1, the error logged, when run fails. Call it once flags are parsed.
func (f *Flags) Main(name string, run func(ctx context.Context) error) {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.Zap)))
	if err := run(ctrl.SetupSignalHandler()); err != nil {
		ctrl.Log.Error(err, name+" failed")
		os.Exit(1)
	}
}

// Start adds the /healthz and /readyz checks (a ping: the process serves) to mgr and runs it until ctx
// ends.
func Start(ctx context.Context, mgr manager.Manager) error {
	if err := errors.Join(mgr.AddHealthzCheck("healthz", healthz.Ping), mgr.AddReadyzCheck("readyz", healthz.Ping)); err != nil {
		return fmt.Errorf("add health checks: %w", err)
	}
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}
