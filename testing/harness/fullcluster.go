package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/convergo-dev/convergo/testing/assets"
	"github.com/convergo-dev/convergo/testing/cluster"
)

// fullClusterConfig holds WithFullCluster's settings.
type fullClusterConfig struct {
	opts []cluster.Option
}

// WithFullCluster starts a full local cluster (testing/cluster: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok fake nodes) instead of envtest's bare API server, so
// that garbage collection, namespace deletion, Deployments and pods behave as in a real cluster. The
// five binaries come from assets.Ensure; opts are passed to cluster.Start (e.g. cluster.WithNodes).
func WithFullCluster(opts ...cluster.Option) Option {
	return func(c *config) {
		if c.fullCluster == nil {
			c.fullCluster = &fullClusterConfig{}
		}
		c.fullCluster.opts = append(c.fullCluster.opts, opts...)
	}
}

// Cluster returns the full local cluster when the environment runs one (WithFullCluster), nil in plain
// mode.
func (e *Env) Cluster() *cluster.Cluster {
	return e.cluster
}

func (e *Env) startFullCluster(ctx context.Context, cfg *config) error {
	dir, err := assets.Ensure(ctx, cfg.assetOptions(assets.ClusterComponents())...)
	if err != nil {
		return fmt.Errorf("locate control-plane binaries: %w", err)
	}
	opts := append(slices.Clone(cfg.fullCluster.opts), cluster.WithBinaryDir(dir))
	cl, err := cluster.Start(ctx, opts...)
	if err != nil {
		return fmt.Errorf("start full cluster: %w", err)
	}
	e.cluster = cl
	e.stopFns = append(e.stopFns, func() error {
		if err := cl.Stop(); err != nil {
			return fmt.Errorf("stop full cluster: %w", err)
		}
		return nil
	})
	e.logTails = cl.LogTails
	e.Config = cl.Config
	e.KubeconfigPath = cl.KubeconfigPath
	if cfg.kubectl {
		e.KubectlPath = filepath.Join(dir, string(assets.Kubectl))
	}
	return nil
}
