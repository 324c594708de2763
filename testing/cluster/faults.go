package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"
)

// Fault injection: the hooks below break the control plane on purpose, so that tests can check that
// an operator survives what happens to real clusters (an API server that dies and comes back, an etcd
// that stops answering for a while). They are safe to call while clients are using the cluster.

// KillAPIServer kills kube-apiserver with SIGKILL (no graceful shutdown: open connections are reset,
// in-flight requests fail) and waits until the process is gone. etcd and the other components keep
// running; the controller-manager, scheduler and kwok retry until StartAPIServer brings it back. The
// exit is expected: Stop does not report it as a crash. Killing an API server that is not running is an
// error.
func (c *Cluster) KillAPIServer() error {
	p, err := c.running(APIServer)
	if err != nil {
		return fmt.Errorf("kill %s: %w", APIServer, err)
	}
	if err := p.kill(); err != nil {
		return err
	}
	c.mu.Lock()
	c.procs = slices.DeleteFunc(c.procs, func(q *process) bool { return q == p })
	c.mu.Unlock()
	c.cfg.logger.Info("fault: killed component", "component", APIServer)
	return nil
}

// StartAPIServer starts kube-apiserver again after KillAPIServer, with the same flags, port,
// certificates and etcd, so Config and KubeconfigPath stay valid and every object stored before the
// kill is still there. It returns when /readyz answers ok; the new output is appended to
// logs/kube-apiserver.log. It is an error if the API server is running.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	stopped, ports := c.stopped, c.ports
	running := slices.ContainsFunc(c.procs, func(p *process) bool { return p.component == APIServer })
	c.mu.Unlock()
	switch {
	case stopped:
		return fmt.Errorf("start %s: the cluster is stopped", APIServer)
	case running:
		return fmt.Errorf("start %s: it is running; kill it first", APIServer)
	case ports == nil || c.pki == nil:
		return fmt.Errorf("start %s: the cluster never started", APIServer)
	}
	logPath := c.logPath(APIServer)
	if err := appendLine(logPath, fmt.Sprintf("==== convergo cluster: %s restarted at %s ====",
		APIServer, time.Now().Format(time.RFC3339Nano))); err != nil {
		return fmt.Errorf("start %s: %w", APIServer, err)
	}
	args := append(c.apiServerArgs(ports, c.files), c.cfg.extraArgs[APIServer]...)
	p, err := startProcessLog(APIServer, c.bins.paths[APIServer], args, nil, logPath, os.O_APPEND)
	if err != nil {
		return err
	}
	// Keep start order (after etcd), so that Stop still stops the API server before etcd.
	c.mu.Lock()
	at := slices.IndexFunc(c.procs, func(q *process) bool { return q.component == Etcd }) + 1
	c.procs = slices.Insert(c.procs, at, p)
	c.mu.Unlock()

	probe := newProbeClient(c.pki)
	defer probe.CloseIdleConnections()
	if err := c.waitFor(ctx, p, "/readyz", httpOK(probe, "https://"+ports.apiServer.addr()+"/readyz", "")); err != nil {
		return fmt.Errorf("restart %s: %w", APIServer, err)
	}
	c.cfg.logger.Info("fault: restarted component", "component", APIServer)
	return nil
}

// RestartAPIServer kills kube-apiserver with SIGKILL and starts it again on the same etcd
// (KillAPIServer then StartAPIServer). It returns once the new API server is ready.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	if err := c.KillAPIServer(); err != nil {
		return err
	}
	return c.StartAPIServer(ctx)
}

// PauseEtcd freezes etcd with SIGSTOP: the process stays alive with its connections open but answers
// nothing, as a stalled disk or a long garbage-collection pause would. The API server's requests that
// need storage hang until its timeouts; reads served from its watch cache keep working. ResumeEtcd
// undoes it; Stop resumes a paused etcd before terminating it.
func (c *Cluster) PauseEtcd() error {
	p, err := c.running(Etcd)
	if err != nil {
		return fmt.Errorf("pause %s: %w", Etcd, err)
	}
	if err := pause(p.cmd.Process); err != nil {
		return fmt.Errorf("pause %s: %w", Etcd, err)
	}
	c.cfg.logger.Info("fault: paused component", "component", Etcd)
	return nil
}

// ResumeEtcd lets a paused etcd run again (SIGCONT). Resuming an etcd that is not paused does nothing.
func (c *Cluster) ResumeEtcd() error {
	p, err := c.running(Etcd)
	if err != nil {
		return fmt.Errorf("resume %s: %w", Etcd, err)
	}
	if err := resume(p.cmd.Process); err != nil {
		return fmt.Errorf("resume %s: %w", Etcd, err)
	}
	c.cfg.logger.Info("fault: resumed component", "component", Etcd)
	return nil
}

// PauseEtcdFor pauses etcd, waits d (or until ctx is done) and resumes it. etcd is resumed also
// when ctx ends early, in which case the context's error is returned.
func (c *Cluster) PauseEtcdFor(ctx context.Context, d time.Duration) error {
	if err := c.PauseEtcd(); err != nil {
		return err
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	var waitErr error
	select {
	case <-timer.C:
	case <-ctx.Done():
		waitErr = ctx.Err()
	}
	return errors.Join(c.ResumeEtcd(), waitErr)
}

// running returns the live process of comp, or an error if the cluster is stopped or comp is not
// running (never started, killed, or exited on its own).
func (c *Cluster) running(comp Component) (*process, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, errors.New("the cluster is stopped")
	}
	for _, p := range c.procs {
		if p.component != comp {
			continue
		}
		if done, err := p.exited(); done {
			return nil, fmt.Errorf("it exited (%s)", exitDescription(err))
		}
		return p, nil
	}
	return nil, errors.New("it is not running")
}

// appendLine appends line and a newline to the file at path, creating it if needed.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	if _, err := fmt.Fprintln(f, line); err != nil {
		f.Close()
		return fmt.Errorf("write log: %w", err)
	}
	return f.Close()
}
