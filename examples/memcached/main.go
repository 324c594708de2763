package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/memcached/controller"
	mcwebhook "github.com/convergo-dev/convergo/examples/memcached/webhook"
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
	// webhookHost, webhookPort and webhookCertPath place the webhook server (9443 and
	// controller-runtime's certificate directory by default); it runs unless ENABLE_WEBHOOKS=false.
	webhookHost     string
	webhookPort     int
	webhookCertPath string
	// Sharding: several active replicas, each reconciling its share (see package sharding).
	shardRing, shardMember, shardNamespace string
	zap                                    zap.Options
}

func main() {
	var f flags
	flag.StringVar(&f.metricsAddr, "metrics-bind-address", "0", `Address of the metrics endpoint, e.g. ":8443"; "0" turns it off.`)
	flag.BoolVar(&f.secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS, to callers authenticated and authorized by the API server.")
	flag.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", `Address of the /healthz and /readyz endpoints; "0" turns them off.`)
	flag.BoolVar(&f.leaderElect, "leader-elect", false, "Elect a leader, so that only one of several replicas reconciles.")
	flag.StringVar(&f.leaderElectNS, "leader-election-namespace", "", "Namespace of the leader election Lease (default: the pod's namespace; required outside a cluster).")
	flag.IntVar(&f.concurrency, "max-concurrent-reconciles", controller.DefaultMaxConcurrentReconciles, "How many Memcacheds are reconciled at once.")
	flag.IntVar(&f.deletions, "max-concurrent-deletions", controller.DefaultMaxConcurrentDeletions, "How many Memcacheds being deleted are finalized at once, besides the others (0: they share --max-concurrent-reconciles).")
	flag.StringVar(&f.webhookHost, "webhook-host", "", `Address the webhook server listens on ("": all).`)
	flag.IntVar(&f.webhookPort, "webhook-port", webhook.DefaultPort, "Port of the webhook server.")
	flag.StringVar(&f.webhookCertPath, "webhook-cert-path", "", "Directory of the webhook server's tls.crt and tls.key (default: controller-runtime's, <temp>/k8s-webhook-server/serving-certs).")
	flag.StringVar(&f.shardRing, "shard-ring", "", "Run sharded: every replica is active and reconciles its share of the Memcacheds; the ring's name. Excludes --leader-elect.")
	flag.StringVar(&f.shardMember, "shard-member", os.Getenv("POD_NAME"), "This replica's stable name in the ring (default: $POD_NAME, a StatefulSet pod's name).")
	flag.StringVar(&f.shardNamespace, "shard-namespace", os.Getenv("POD_NAMESPACE"), "Namespace of the ring's Leases (default: $POD_NAMESPACE).")
	f.zap.BindFlags(flag.CommandLine)
	flag.Parse()

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap)))
	if err := run(ctrl.SetupSignalHandler(), f); err != nil {
		ctrl.Log.Error(err, "memcached operator failed")
		os.Exit(1)
	}
}

// run starts the manager and blocks until ctx is done. The defaulting webhook is served unless the
// environment sets ENABLE_WEBHOOKS=false (kubebuilder's switch, for `ENABLE_WEBHOOKS=false go run
// ./examples/memcached` against a cluster that has the CRDs but not the webhook configuration).
func run(ctx context.Context, f flags) error {
	enableWebhooks := os.Getenv("ENABLE_WEBHOOKS") != "false"

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
		Metrics:                       metrics,
		HealthProbeBindAddress:        f.probeAddr,
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              "memcached.cache.convergo.dev",
		LeaderElectionNamespace:       f.leaderElectNS,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{MaxConcurrentReconciles: f.concurrency},
		WebhookServer:                 webhook.NewServer(webhook.Options{Host: f.webhookHost, Port: f.webhookPort, CertDir: f.webhookCertPath}),

		// Controllers start as soon as the informers have listed, not at the next 100-ms check.
		NewCache: reconcile.NewCache,
	}
	// The cache holds no managedFields, and of the child kinds only this operator's children.
	controller.CacheOptions(&opts.Cache)
	shardCfg := sharding.Config{Ring: f.shardRing, Member: f.shardMember, Namespace: f.shardNamespace}
	if f.shardRing != "" {
		if f.leaderElect {
			return errors.New("--shard-ring and --leader-elect exclude each other: every replica of a sharded operator is active; drop --leader-elect")
		}
		if err := shardCfg.Validate(); err != nil {
			return fmt.Errorf("sharding flags (--shard-ring, --shard-member, --shard-namespace): %w", err)
		}
		// The caches hold only this replica's share of the Memcacheds and their children.
		controller.ShardCacheOptions(&opts.Cache, shardCfg)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	setupOpts := []reconcile.ReconcilerOption{reconcile.WithDeletionConcurrency(f.deletions)}
	if f.shardRing != "" {
		shard, err := sharding.Join(mgr, shardCfg, &v1alpha1.Memcached{})
		if err != nil {
			return err
		}
		setupOpts = append(setupOpts, reconcile.WithSharding(shard))
	}
	if err := controller.Setup(setupOpts...)(mgr); err != nil {
		return fmt.Errorf("set up the memcached controller: %w", err)
	}
	if enableWebhooks {
		if err := mcwebhook.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("add readiness check: %w", err)
	}
	if enableWebhooks {
		// Ready once the webhook server answers over TLS, so that a rollout waits for it.
		if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return fmt.Errorf("add webhook readiness check: %w", err)
		}
	}
	ctrl.Log.Info("starting the memcached operator")
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}
