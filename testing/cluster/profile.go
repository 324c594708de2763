package cluster

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"
)

// pprofPaths are the paths kube-controller-manager and kube-scheduler serve without authorisation:
// their defaults (the health checks) and the Go profiler, which CPUProfile reads. Both listen on
// 127.0.0.1 only.
const pprofPaths = "--authorization-always-allow-paths=/healthz,/readyz,/livez,/debug/pprof,/debug/pprof/*"

// maxProfileBytes bounds the answer CPUProfile reads: a minute's CPU profile of the API server under
// load is a few hundred kilobytes.
const maxProfileBytes = 64 << 20

// CPUProfile records a CPU profile of comp (APIServer, ControllerManager or Scheduler) for d, rounded
// up to whole seconds, and returns it in the pprof format (`go tool pprof -top FILE`; several files
// given together are merged). It returns once d has passed. The API server is asked with the admin
// certificate; the controller-manager and the scheduler serve their profiler without authorisation,
// on 127.0.0.1 only. Keep d under the API server's request timeout (60 s), which ends a longer
// request.
func (c *Cluster) CPUProfile(ctx context.Context, comp Component, d time.Duration) ([]byte, error) {
	url, err := c.pprofURL(comp)
	if err != nil {
		return nil, fmt.Errorf("cpu profile of %s: %w", comp, err)
	}
	seconds := max(1, int(math.Ceil(d.Seconds())))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", url, seconds), nil)
	if err != nil {
		return nil, fmt.Errorf("cpu profile of %s: %w", comp, err)
	}
	client := newProbeClient(c.pki)
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cpu profile of %s: %w", comp, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxProfileBytes))
	if err != nil {
		return nil, fmt.Errorf("cpu profile of %s: read answer: %w", comp, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("cpu profile of %s: %s: %.200s", comp, resp.Status, data)
	}
	return data, nil
}

// pprofURL returns the base URL of comp's profiler, once comp is running.
func (c *Cluster) pprofURL(comp Component) (string, error) {
	if comp != APIServer && comp != ControllerManager && comp != Scheduler {
		return "", fmt.Errorf("no profiler: only %s, %s and %s serve one", APIServer, ControllerManager, Scheduler)
	}
	if _, err := c.running(comp); err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := map[Component]*portReservation{
		APIServer: c.ports.apiServer, ControllerManager: c.ports.controllerManager, Scheduler: c.ports.scheduler,
	}[comp]
	return "https://" + r.addr(), nil
}
