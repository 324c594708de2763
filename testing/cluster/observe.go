package cluster

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"
)

// observePaths are the paths kube-controller-manager and kube-scheduler serve without authorisation:
// their defaults (the health checks), their metrics and the Go profiler, which Metrics and
// CPUProfile read. Both listen on 127.0.0.1 only; without a delegated authoriser
// (--authorization-kubeconfig) they would refuse every other path.
const observePaths = "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/debug/pprof,/debug/pprof/*"

// maxObserveBytes bounds an answer of Metrics or CPUProfile: a minute's CPU profile of the API
// server under load is a few hundred kilobytes, its metrics a few megabytes.
const maxObserveBytes = 64 << 20

// CPUProfile records a CPU profile of comp (APIServer, ControllerManager or Scheduler) for d, rounded
// up to whole seconds, and returns it in the pprof format (`go tool pprof -top FILE`; several files
// given together are merged). It returns once d has passed. Keep d under the API server's request
// timeout (60 s), which ends a longer request.
func (c *Cluster) CPUProfile(ctx context.Context, comp Component, d time.Duration) ([]byte, error) {
	seconds := max(1, int(math.Ceil(d.Seconds())))
	data, err := c.observe(ctx, comp, fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds))
	if err != nil {
		return nil, fmt.Errorf("cpu profile of %s: %w", comp, err)
	}
	return data, nil
}

// Metrics returns the metrics of comp (APIServer, ControllerManager or Scheduler) in the Prometheus
// text format: for the controller-manager, among others, each controller's work queue
// (workqueue_adds_total, workqueue_work_duration_seconds by queue name).
func (c *Cluster) Metrics(ctx context.Context, comp Component) ([]byte, error) {
	data, err := c.observe(ctx, comp, "/metrics")
	if err != nil {
		return nil, fmt.Errorf("metrics of %s: %w", comp, err)
	}
	return data, nil
}

// observe GETs path from comp's secure port: the API server is asked with the admin certificate, the
// controller-manager and the scheduler serve it without authorisation (observePaths).
func (c *Cluster) observe(ctx context.Context, comp Component, path string) ([]byte, error) {
	base, err := c.observeURL(comp)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return nil, err
	}
	client := newProbeClient(c.pki)
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxObserveBytes))
	if err != nil {
		return nil, fmt.Errorf("read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %.200s", path, resp.Status, data)
	}
	return data, nil
}

// observeURL returns the base URL of comp's secure port, once comp is running.
func (c *Cluster) observeURL(comp Component) (string, error) {
	if comp != APIServer && comp != ControllerManager && comp != Scheduler {
		return "", fmt.Errorf("only %s, %s and %s serve metrics and a profiler", APIServer, ControllerManager, Scheduler)
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
