package cluster

import (
	"fmt"
	"os"
	"slices"
	"time"
)

// kwok is restarted when it exits on its own, as a service manager restarts a kubelet: it keeps no
// state of its own (the API server holds the nodes, leases and pods), so a new kwok on the same port
// picks up where the old one stopped. kwok v0.8.0 can die at start with "fatal error: concurrent map
// writes": its node and lease stages build their CEL environments at once, and easycel's type cache
// (a package-level map) has no lock. No release fixes it yet (docs/upstream.md).

// maxKwokRestarts bounds the restarts of kwok in one cluster's life; a kwok that keeps dying is
// left dead, and Stop reports it.
const maxKwokRestarts = 5

// restartDelay is how long supervise waits before a restart, so that a component that dies at once
// does not spin.
const restartDelay = 500 * time.Millisecond

// supervised reports whether c restarts comp when it exits on its own.
func supervised(comp Component) bool { return comp == Kwok }

// supervise waits for p to exit and, when nobody asked it to (no Stop, no failed start, no fault),
// starts it again with the same arguments and environment, appending to its log.
func (c *Cluster) supervise(p *process, args, env []string) {
	<-p.done
	time.Sleep(restartDelay)
	c.mu.Lock()
	defer c.mu.Unlock()
	at := slices.Index(c.procs, p)
	if at < 0 || c.stopped || p.isStopping() || c.restarts >= maxKwokRestarts {
		return
	}
	_, waitErr := p.exited()
	logPath := c.logPath(p.component)
	marker := fmt.Sprintf("==== convergo cluster: %s exited on its own (%s), restarted at %s ====",
		p.component, exitDescription(waitErr), time.Now().Format(time.RFC3339Nano))
	if err := appendLine(logPath, marker); err != nil {
		c.cfg.logger.Error(err, "cannot mark the restart in the log", "component", p.component)
	}
	next, err := startProcessLog(p.component, c.bins.paths[p.component], args, env, logPath, os.O_APPEND)
	if err != nil {
		c.cfg.logger.Error(err, "cannot restart component", "component", p.component)
		return
	}
	c.restarts++
	c.procs[at] = next
	c.cfg.logger.Info("component exited on its own; restarted it", "component", p.component,
		"exit", exitDescription(waitErr), "restarts", c.restarts)
	go c.supervise(next, args, env)
}

// willRestart reports whether p, which has exited, is about to be replaced by supervise, so that
// waiting for the cluster to become ready goes on instead of failing.
func (c *Cluster) willRestart(p *process) bool {
	if !supervised(p.component) || p.isStopping() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.stopped && c.restarts < maxKwokRestarts
}
