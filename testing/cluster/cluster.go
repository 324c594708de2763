package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Cluster is a running local control plane: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok, each a process on 127.0.0.1, plus fake nodes that kwok keeps Ready.
type Cluster struct {
	// Config is an admin (system:masters) configuration for the API server, QPS 200 and Burst 400.
	Config *rest.Config
	// KubeconfigPath is an admin kubeconfig file with embedded certificates, e.g. for kubectl.
	KubeconfigPath string
	// RunDir holds pki/, kubeconfigs, data/ and logs/<component>.log.
	RunDir string
	// Nodes names the fake nodes, all Ready when Start returns.
	Nodes []string

	cfg          config
	bins         binaries
	removeRunDir bool
	pki          *pki     // kept for restarting the API server (faults.go)
	files        pkiFiles // the PKI files the components read

	mu       sync.Mutex
	procs    []*process // running components, in start order
	ports    *ports     // the ports of the last start attempt
	stopped  bool
	restarts int // how many times supervise restarted kwok
}

// maxStartAttempts bounds restarts after a port that was free when reserved was taken by someone
// else before the component bound it (several test packages start clusters at once).
const maxStartAttempts = 3

// Start launches the control plane and returns when every component is ready, the nodes are
// Ready and the controller-manager has created the default ServiceAccount in "default".
// If any step fails, whatever was started is stopped and the error (a *StartError when a
// component is to blame) carries the failing component's log tail. ctx bounds the whole start;
// once Start has returned, the processes run until Stop.
func Start(ctx context.Context, opts ...Option) (*Cluster, error) {
	begin := time.Now()
	cfg := newConfig(opts)
	if cfg.nodes < 0 {
		return nil, fmt.Errorf("start cluster: negative node count %d", cfg.nodes)
	}
	bins, err := cfg.locateBinaries()
	if err != nil {
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	if cfg.startTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.startTimeout)
		defer cancel()
	}

	c := &Cluster{cfg: cfg, bins: bins, RunDir: cfg.runDir}
	if c.RunDir == "" {
		c.RunDir, err = os.MkdirTemp("", "convergo-cluster-")
		if err != nil {
			return nil, fmt.Errorf("start cluster: create run dir: %w", err)
		}
		c.removeRunDir = true
	} else if err := os.MkdirAll(c.RunDir, 0o755); err != nil {
		return nil, fmt.Errorf("start cluster: create run dir: %w", err)
	}
	for _, dir := range []string{"logs", "data", "kubeconfigs"} {
		if err := os.MkdirAll(filepath.Join(c.RunDir, dir), 0o755); err != nil {
			c.cleanup()
			return nil, fmt.Errorf("start cluster: create %s dir: %w", dir, err)
		}
	}
	pki, err := newPKI()
	if err != nil {
		c.cleanup()
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	files, err := pki.write(filepath.Join(c.RunDir, "pki"))
	if err != nil {
		c.cleanup()
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	c.pki, c.files = pki, files

	for attempt := 1; ; attempt++ {
		err := c.startOnce(ctx, pki, files)
		if err == nil {
			cfg.logger.Info("cluster started", "runDir", c.RunDir, "nodes", len(c.Nodes),
				"duration", time.Since(begin).Round(time.Millisecond).String())
			return c, nil
		}
		// A component that died is already the subject of err: report only failures to stop.
		stopErr := c.stopProcesses(false)
		if attempt < maxStartAttempts && ctx.Err() == nil && isPortConflict(err) {
			cfg.logger.Info("port taken before the component bound it, retrying with new ports",
				"attempt", attempt, "error", err.Error())
			continue
		}
		c.cleanup()
		if stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stop after failed start: %w", stopErr))
		}
		return nil, fmt.Errorf("start cluster: %w", err)
	}
}

// isPortConflict reports whether err came from a component that could not bind its port.
func isPortConflict(err error) bool {
	var se *StartError
	return errors.As(err, &se) && strings.Contains(se.LogTail, "address already in use")
}

// Stop terminates the components in reverse start order (kwok, scheduler, controller-manager,
// API server, etcd): SIGTERM, then SIGKILL after the stop timeout, waiting for each to exit. A
// temporary run directory is removed afterwards. Stop reports components that had died on their
// own during the run. Calling Stop again does nothing and returns nil.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	c.mu.Unlock()
	err := c.stopProcesses(true)
	if rmErr := c.cleanup(); rmErr != nil {
		err = errors.Join(err, rmErr)
	}
	if err != nil {
		return fmt.Errorf("stop cluster: %w", err)
	}
	return nil
}

// stopProcesses stops every running component in reverse start order and forgets them. With
// reportCrashes, a component that had exited on its own before the stop is an error.
func (c *Cluster) stopProcesses(reportCrashes bool) error {
	c.mu.Lock()
	procs := c.procs
	c.procs = nil
	c.mu.Unlock()
	// A component frozen by a fault (PauseEtcd) would stall the shutdown of the others.
	for _, p := range procs {
		_ = resume(p.cmd.Process)
	}
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		start := time.Now()
		if err := p.stop(c.cfg.stopTimeout); err != nil {
			var crashed *exitedError
			if reportCrashes || !errors.As(err, &crashed) {
				errs = append(errs, err)
			}
		}
		c.cfg.logger.V(1).Info("stopped component", "component", p.component,
			"duration", time.Since(start).Round(time.Millisecond).String())
	}
	return errors.Join(errs...)
}

// cleanup removes a temporary run directory.
func (c *Cluster) cleanup() error {
	if !c.removeRunDir {
		return nil
	}
	if err := os.RemoveAll(c.RunDir); err != nil {
		return fmt.Errorf("remove run dir: %w", err)
	}
	return nil
}

// LogTails returns the last lines of every component's log, each introduced by
// "==> <component>.log <==", in start order. Components that never started are left out.
func (c *Cluster) LogTails(lines int) string {
	var b strings.Builder
	for _, comp := range c.cfg.components() {
		path := c.logPath(comp)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		b.WriteString(formatTail(path, lines))
	}
	return b.String()
}

func (c *Cluster) logPath(comp Component) string {
	return filepath.Join(c.RunDir, "logs", string(comp)+".log")
}

// startError builds the error for a failing component, with its log tail.
func (c *Cluster) startError(comp Component, err error) error {
	return &StartError{Component: comp, Err: err, LogTail: formatTail(c.logPath(comp), startErrorLogLines)}
}

// startErrorLogLines is how much of the failing component's log a StartError carries.
const startErrorLogLines = 40
