package bench

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// controller-runtime's metrics of finished reconciles, labelled by controller (and result).
const (
	reconcileTotalMetric = "controller_runtime_reconcile_total"
	reconcileTimeMetric  = "controller_runtime_reconcile_time_seconds"
)

// reconcileStats is what the controllers of the process have done so far.
type reconcileStats struct {
	// count is the number of finished reconciles.
	count int
	// seconds is the time spent in them.
	seconds float64
}

// reconciles returns the reconcile statistics of every controller of the process, from
// controller-runtime's metrics registry (filled whether or not a metrics endpoint is served). The
// bench runs one manager at a time, so differences are that manager's reconciles.
func reconciles() (reconcileStats, error) {
	quietRegistry()
	return statsFrom(ctrlmetrics.Registry)
}

// quietRegistry takes out of controller-runtime's registry the process and Go runtime collectors it
// registers there. The bench reads none of their metrics, and gathering them is not free: the
// process collector reads several files of /proc at every gather. The restart phase gathers the
// registry every restartPollInterval, so they took 7% of the CPU of the process under measurement
// (the manager's and the driver's) during a restart.
var quietRegistry = sync.OnceFunc(func() {
	ctrlmetrics.Registry.Unregister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ctrlmetrics.Registry.Unregister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsAll)))
})

// reconcileCount returns reconciles().count.
func reconcileCount() (int, error) {
	s, err := reconciles()
	return s.count, err
}

// statsFrom sums the reconcile_total counters and reconcile_time_seconds histograms gathered from g.
func statsFrom(g prometheus.Gatherer) (reconcileStats, error) {
	families, err := g.Gather()
	if err != nil {
		return reconcileStats{}, fmt.Errorf("gather controller metrics: %w", err)
	}
	var total, seconds float64
	for _, f := range families {
		switch f.GetName() {
		case reconcileTotalMetric:
			for _, m := range f.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		case reconcileTimeMetric:
			for _, m := range f.GetMetric() {
				seconds += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return reconcileStats{count: int(total), seconds: seconds}, nil
}
