package main

import (
	"context"
	"flag"
	"os"

	"github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/memcached/controller"
	mcwebhook "github.com/convergo-dev/convergo/examples/memcached/webhook"
	"github.com/convergo-dev/convergo/reconcile/operator"
)

func main() {
	var f operator.Flags
	f.Bind(flag.CommandLine)
	flag.Parse()
	f.Main("memcached operator", func(ctx context.Context) error { return run(ctx, f) })
}

// run starts the manager and blocks until ctx is done. The defaulting webhook is served unless the
// environment sets ENABLE_WEBHOOKS=false (kubebuilder's switch, for running outside the cluster).
func run(ctx context.Context, f operator.Flags) error {
	mgr, err := f.NewManager("memcached.cache.convergo.dev", controller.CacheOptions, v1alpha1.AddToScheme)
	if err != nil {
		return err
	}
	if err := controller.SetupWithManager(mgr); err != nil {
		return err
	}
	if os.Getenv("ENABLE_WEBHOOKS") != "false" {
		if err := mcwebhook.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	return operator.Start(ctx, mgr)
}
