package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/welcome/controller"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/sharding"
)

// flags are the command-line options.
type flags struct {
	metricsAddr   string
	secureMetrics bool
	probeAddr     string
	leaderElect   bool
	leaderElectNS string
	concurrency   int
	deletions     int
	pprofAddr     string
	// Sharding: several active replicas, each reconciling its share (see package sharding).
	shardRing, shardMember, shardNamespace string
	// The Lease's timings of a sharded replica (sharding.WithLeaseTimings).
	shardLease, shardRenew, shardRetry time.Duration
	zap                                zap.Options
}

func main() {
	var f flags
	flag.StringVar(&f.metricsAddr, "metrics-bind-address", "0", `Address of the metrics endpoint, e.g. ":8443"; "0" turns it off.`)
	flag.BoolVar(&f.secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS, to callers authenticated and authorized by the API server.")
	flag.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", `Address of the /healthz and /readyz endpoints; "0" turns them off.`)
	flag.BoolVar(&f.leaderElect, "leader-elect", false, "Elect a leader, so that only one of several replicas reconciles.")
	flag.StringVar(&f.leaderElectNS, "leader-election-namespace", "", "Namespace of the leader election Lease (default: the pod's namespace; required outside a cluster).")
	flag.IntVar(&f.concurrency, "max-concurrent-reconciles", 0, "How many Welcomes are reconciled at once (0: Convergo's default, 4; 8 for a sharded replica, which takes a dead member's share over at once).")
	flag.IntVar(&f.deletions, "max-concurrent-deletions", -1, "How many Welcomes being deleted are finalized at once, besides the others (-1: Convergo's default, 20; 0: they share --max-concurrent-reconciles).")
	flag.StringVar(&f.pprofAddr, "pprof-bind-address", "", `Address of the Go profiler's endpoints (/debug/pprof), e.g. "127.0.0.1:6060"; empty turns them off.`)
	flag.StringVar(&f.shardRing, "shard-ring", "", "Run sharded: every replica is active and reconciles its share of the Welcomes; the ring's name. Excludes --leader-elect.")
	flag.StringVar(&f.shardMember, "shard-member", os.Getenv("POD_NAME"), "This replica's stable name in the ring (default: $POD_NAME, a StatefulSet pod's name).")
	flag.StringVar(&f.shardNamespace, "shard-namespace", os.Getenv("POD_NAMESPACE"), "Namespace of the ring's Leases (default: $POD_NAMESPACE).")
	flag.DurationVar(&f.shardLease, "shard-lease-duration", 15*time.Second, "How long a sharded replica's Lease holds unrenewed; a dead replica's objects are taken over after about this much.")
	flag.DurationVar(&f.shardRenew, "shard-renew-deadline", 10*time.Second, "How long a sharded replica keeps writing without renewing its Lease (less than --shard-lease-duration).")
	flag.DurationVar(&f.shardRetry, "shard-retry-period", 2*time.Second, "How often a sharded replica renews its Lease and looks at the others'.")
	f.zap.BindFlags(flag.CommandLine)
	flag.Parse()

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap)))
	if err := run(ctrl.SetupSignalHandler(), f); err != nil {
		ctrl.Log.Error(err, "welcome operator failed")
		os.Exit(1)
	}
}

// run starts the manager and blocks until ctx is done.
// takeOverWorkers is a sharded replica's default number of reconciles at once.
const takeOverWorkers = 8

func run(ctx context.Context, f flags) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("build scheme: %w", err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("build scheme: %w", err)
	}
	metrics := metricsserver.Options{BindAddress: f.metricsAddr, SecureServing: f.secureMetrics}
	if f.secureMetrics {
		metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	opts := ctrl.Options{
		Scheme:                        scheme,
		PprofBindAddress:              f.pprofAddr,
		Metrics:                       metrics,
		HealthProbeBindAddress:        f.probeAddr,
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              "welcome.web.convergo.dev",
		LeaderElectionNamespace:       f.leaderElectNS,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{MaxConcurrentReconciles: f.concurrency},
	}
	// The cache holds no managedFields, and of the child kinds only this operator's children.
	controller.CacheOptions(&opts.Cache)
	shardCfg := sharding.Config{Ring: f.shardRing, Member: f.shardMember, Namespace: f.shardNamespace}
	if f.shardRing != "" {
		if f.concurrency == 0 {
			// A survivor takes a dead member's share over at once: its take-over reconciles are
			// mostly round trips, so more of them run side by side (docs/sharding.md, failover bound).
			opts.Controller.MaxConcurrentReconciles = takeOverWorkers
		}
		if f.leaderElect {
			return errors.New("--shard-ring and --leader-elect exclude each other: every replica of a sharded operator is active; drop --leader-elect")
		}
		if err := shardCfg.Validate(); err != nil {
			return fmt.Errorf("sharding flags (--shard-ring, --shard-member, --shard-namespace): %w", err)
		}
		// The caches hold only this replica's share of the Welcomes and their children.
		controller.ShardCacheOptions(&opts.Cache, shardCfg)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	var setupOpts []reconcile.ReconcilerOption
	if f.deletions >= 0 {
		setupOpts = append(setupOpts, reconcile.WithDeletionConcurrency(f.deletions))
	}
	if f.shardRing != "" {
		shard, err := sharding.Join(mgr, shardCfg, &v1alpha1.Welcome{}, sharding.WithLeaseTimings(f.shardLease, f.shardRenew, f.shardRetry))
		if err != nil {
			return err
		}
		setupOpts = append(setupOpts, reconcile.WithSharding(shard))
	}
	if err := controller.Setup(setupOpts...)(mgr); err != nil {
		return fmt.Errorf("set up the welcome controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("add readiness check: %w", err)
	}
	ctrl.Log.Info("starting the welcome operator")
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}
