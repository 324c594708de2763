package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/memcached/controller"
	mcwebhook "github.com/convergo-dev/convergo/examples/memcached/webhook"
)

// flags are the command-line options.
type flags struct {
	metrics                   metricsserver.Options
	probeAddr, leaderElection string // leaderElection: the Lease's namespace; "" means no election
	webhook                   webhook.Options
}

func main() {
	var f flags
	flag.StringVar(&f.metrics.BindAddress, "metrics-bind-address", "0", `Address of the HTTPS metrics endpoint, e.g. ":8443"; "0" turns it off.`)
	flag.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", `Address of /healthz and /readyz; "0" turns them off.`)
	flag.StringVar(&f.leaderElection, "leader-election-namespace", "", "Elect a leader with a Lease in this namespace (empty: no election).")
	flag.IntVar(&f.webhook.Port, "webhook-port", webhook.DefaultPort, "Port of the webhook server.")
	flag.StringVar(&f.webhook.CertDir, "webhook-cert-path", "", "Directory of the webhook server's tls.crt and tls.key.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if err := run(ctrl.SetupSignalHandler(), f); err != nil {
		ctrl.Log.Error(err, "memcached operator failed")
		os.Exit(1)
	}
}

// run starts the manager and blocks until ctx is done. The defaulting webhook is served unless the
// environment sets ENABLE_WEBHOOKS=false (kubebuilder's switch, for running outside the cluster).
func run(ctx context.Context, f flags) error {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	f.metrics.SecureServing, f.metrics.FilterProvider = true, filters.WithAuthenticationAndAuthorization
	opts := ctrl.Options{Scheme: scheme, Metrics: f.metrics, HealthProbeBindAddress: f.probeAddr,
		LeaderElection: f.leaderElection != "", LeaderElectionNamespace: f.leaderElection,
		LeaderElectionID: "memcached.cache.convergo.dev", WebhookServer: webhook.NewServer(f.webhook)}
	controller.CacheOptions(&opts.Cache) // only this operator's children, without managedFields
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := controller.SetupWithManager(mgr); err != nil {
		return err
	}
	if os.Getenv("ENABLE_WEBHOOKS") != "false" {
		if err := mcwebhook.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	if err := errors.Join(mgr.AddHealthzCheck("healthz", healthz.Ping), mgr.AddReadyzCheck("readyz", healthz.Ping)); err != nil {
		return fmt.Errorf("add health checks: %w", err)
	}
	return mgr.Start(ctx)
}
