package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/convergo-dev/convergo/examples/database/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/database/controller"
	"github.com/convergo-dev/convergo/reconcile/operator"
)

// flags are the standard options and the PostgreSQL server's.
type flags struct {
	operator.Flags
	pgURL, appHost string
	appPort        int
	interval       time.Duration
}

func main() {
	var f flags
	f.Bind(flag.CommandLine)
	flag.StringVar(&f.pgURL, "postgres-url", os.Getenv("POSTGRES_URL"), "Connection URL of a PostgreSQL role that may create roles and databases (default $POSTGRES_URL).")
	flag.StringVar(&f.appHost, "app-host", "", "Host applications reach PostgreSQL at, written to the Secrets (default: the URL's).")
	flag.IntVar(&f.appPort, "app-port", 0, "Port applications reach PostgreSQL at (default: the URL's).")
	flag.DurationVar(&f.interval, "observe-interval", time.Minute, "How often each Database's PostgreSQL objects are checked for drift.")
	flag.Parse()
	f.Main("database operator", func(ctx context.Context) error { return run(ctx, f) })
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
	conn := pool.Config().ConnConfig
	server := controller.Server{Pool: pool, Host: cmp.Or(f.appHost, conn.Host), Port: cmp.Or(f.appPort, int(conn.Port)), Interval: f.interval}
	mgr, err := f.NewManager("database.db.convergo.dev", controller.CacheOptions, v1alpha1.AddToScheme)
	if err != nil {
		return err
	}
	if err := controller.Setup(server)(mgr); err != nil {
		return err
	}
	return operator.Start(ctx, mgr)
}
