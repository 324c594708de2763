package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/convergo-dev/convergo/examples/database/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/database/controller"
)

// flags are the command-line options.
type flags struct {
	metrics             metricsserver.Options
	probeAddr, pgURL    string
	appHost             string
	appPort             int
	interval            time.Duration
	leaderElectionSpace string // the Lease's namespace; "" means no election
}

func main() {
	var f flags
	flag.StringVar(&f.metrics.BindAddress, "metrics-bind-address", "0", `Address of the metrics endpoint; "0" turns it off.`)
	flag.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", `Address of /healthz and /readyz; "0" turns them off.`)
	flag.StringVar(&f.leaderElectionSpace, "leader-election-namespace", "", "Elect a leader with a Lease in this namespace (empty: no election).")
	flag.StringVar(&f.pgURL, "postgres-url", os.Getenv("POSTGRES_URL"), "Connection URL of a PostgreSQL role that may create roles and databases (default $POSTGRES_URL).")
	flag.StringVar(&f.appHost, "app-host", "", "Host applications reach PostgreSQL at, written to the Secrets (default: the URL's).")
	flag.IntVar(&f.appPort, "app-port", 0, "Port applications reach PostgreSQL at (default: the URL's).")
	flag.DurationVar(&f.interval, "observe-interval", time.Minute, "How often each Database's PostgreSQL objects are checked for drift.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if err := run(ctrl.SetupSignalHandler(), f); err != nil {
		ctrl.Log.Error(err, "database operator failed")
		os.Exit(1)
	}
}

// run connects to PostgreSQL, starts the manager and blocks until ctx is done.
func run(ctx context.Context, f flags) error {
	if f.pgURL == "" {
		return errors.New("no PostgreSQL to manage: give --postgres-url or set POSTGRES_URL")
	}
	pool, err := pgxpool.New(ctx, f.pgURL)
	if err != nil {
		return fmt.Errorf("connect to postgres: %w", err)
	}
	defer pool.Close()
	server := controller.Server{Pool: pool, Host: f.appHost, Port: f.appPort, Interval: f.interval}
	if server.Host == "" {
		server.Host = pool.Config().ConnConfig.Host
	}
	if server.Port == 0 {
		server.Port = int(pool.Config().ConnConfig.Port)
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	opts := ctrl.Options{Scheme: scheme, Metrics: f.metrics, HealthProbeBindAddress: f.probeAddr,
		LeaderElection: f.leaderElectionSpace != "", LeaderElectionNamespace: f.leaderElectionSpace,
		LeaderElectionID: "database.db.convergo.dev"}
	controller.CacheOptions(&opts.Cache) // only this operator's Secrets
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := controller.Setup(server)(mgr); err != nil {
		return err
	}
	if err := errors.Join(mgr.AddHealthzCheck("healthz", healthz.Ping), mgr.AddReadyzCheck("readyz", healthz.Ping)); err != nil {
		return fmt.Errorf("add health checks: %w", err)
	}
	return mgr.Start(ctx)
}
