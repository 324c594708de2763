package main

import (
	"context"
	"flag"
	"time"

	"github.com/convergo-dev/convergo/examples/tenancy/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/tenancy/controller"
	"github.com/convergo-dev/convergo/reconcile/member"
	"github.com/convergo-dev/convergo/reconcile/operator"
)

// flags are the standard options and where the member clusters are named.
type flags struct {
	operator.Flags
	secretsNamespace string
	memberTimeout    time.Duration
}

func main() {
	var f flags
	f.Bind(flag.CommandLine)
	flag.StringVar(&f.secretsNamespace, "member-secrets-namespace", "convergo-system", "Namespace of the hub's Secrets labelled "+member.SecretLabel+"=<member> that hold each member cluster's kubeconfig (under "+member.SecretKey+").")
	flag.DurationVar(&f.memberTimeout, "member-timeout", 10*time.Second, "How long a request to a member cluster may take before it fails.")
	flag.Parse()
	f.Main("tenancy operator", func(ctx context.Context) error { return run(ctx, f) })
}

// run starts the manager, with the member clusters its Secrets name, and blocks until ctx is done.
func run(ctx context.Context, f flags) error {
	mgr, err := f.NewManager("tenancy.tenancy.convergo.dev", controller.CacheOptions, v1alpha1.AddToScheme)
	if err != nil {
		return err
	}
	members := member.NewSet(mgr)
	if err := members.FromSecrets(f.secretsNamespace, controller.NewMember(mgr.GetScheme(), f.memberTimeout)); err != nil {
		return err
	}
	if err := controller.Setup(members)(mgr); err != nil {
		return err
	}
	return operator.Start(ctx, mgr)
}
