package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/welcome/controller"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/operator"
	"github.com/convergo-dev/convergo/sharding"
)

// flags are the standard options, the deletion places and sharding's.
type flags struct {
	operator.Flags
	deletions int
	// Sharding: several active replicas, each reconciling its share (see package sharding).
	shardRing, shardMember, shardNamespace string
	// The Lease's timings of a sharded replica (sharding.WithLeaseTimings).
	shardLease, shardRenew, shardRetry time.Duration
}

func main() {
	var f flags
	f.Bind(flag.CommandLine)
	flag.IntVar(&f.deletions, "max-concurrent-deletions", -1, "How many Welcomes being deleted are finalized at once, besides the others (-1: Convergo's default, 20; 0: they share --max-concurrent-reconciles).")
	flag.StringVar(&f.shardRing, "shard-ring", "", "Run sharded: every replica is active and reconciles its share of the Welcomes; the ring's name. Excludes --leader-elect.")
	flag.StringVar(&f.shardMember, "shard-member", os.Getenv("POD_NAME"), "This replica's stable name in the ring (default: $POD_NAME, a StatefulSet pod's name).")
	flag.StringVar(&f.shardNamespace, "shard-namespace", os.Getenv("POD_NAMESPACE"), "Namespace of the ring's Leases (default: $POD_NAMESPACE).")
	flag.DurationVar(&f.shardLease, "shard-lease-duration", 15*time.Second, "How long a sharded replica's Lease holds unrenewed; a dead replica's objects are taken over after about this much.")
	flag.DurationVar(&f.shardRenew, "shard-renew-deadline", 10*time.Second, "How long a sharded replica keeps writing without renewing its Lease (less than --shard-lease-duration).")
	flag.DurationVar(&f.shardRetry, "shard-retry-period", 2*time.Second, "How often a sharded replica renews its Lease and looks at the others'.")
	flag.Parse()
	f.Main("welcome operator", func(ctx context.Context) error { return run(ctx, f) })
}

// takeOverWorkers is a sharded replica's default number of reconciles at once: a survivor takes a
// dead member's share over at once, and its take-over reconciles are mostly round trips, so more of
// them run side by side (docs/sharding.md, failover bound).
const takeOverWorkers = 8

// run starts the manager and blocks until ctx is done.
func run(ctx context.Context, f flags) error {
	shardCfg := sharding.Config{Ring: f.shardRing, Member: f.shardMember, Namespace: f.shardNamespace}
	sharded := f.shardRing != ""
	if sharded {
		if f.LeaderElect {
			return errors.New("--shard-ring and --leader-elect exclude each other: every replica of a sharded operator is active; drop --leader-elect")
		}
		if err := shardCfg.Validate(); err != nil {
			return fmt.Errorf("sharding flags (--shard-ring, --shard-member, --shard-namespace): %w", err)
		}
		if f.MaxConcurrentReconciles == 0 {
			f.MaxConcurrentReconciles = takeOverWorkers
		}
	}
	mgr, err := f.NewManager("welcome.web.convergo.dev", func(opts *cache.Options) {
		controller.CacheOptions(opts) // no managedFields, and of the child kinds only this operator's children
		if sharded {
			controller.ShardCacheOptions(opts, shardCfg) // only this replica's share
		}
	}, v1alpha1.AddToScheme)
	if err != nil {
		return err
	}
	var opts []reconcile.ReconcilerOption
	if f.deletions >= 0 {
		opts = append(opts, reconcile.WithDeletionConcurrency(f.deletions))
	}
	if sharded {
		shard, err := sharding.Join(mgr, shardCfg, &v1alpha1.Welcome{}, sharding.WithLeaseTimings(f.shardLease, f.shardRenew, f.shardRetry))
		if err != nil {
			return err
		}
		opts = append(opts, reconcile.WithSharding(shard))
	}
	if err := controller.Setup(opts...)(mgr); err != nil {
		return err
	}
	return operator.Start(ctx, mgr)
}
