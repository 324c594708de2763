package bench

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// controller-runtime's metrics of finished reconciles, labelled by controller (and result).
const (
	reconcileTotalMetric = "controller_runtime_reconcile_total"
	reconcileTimeMetric  = "controller_runtime_reconcile_time_seconds"
	// placeWaitMetric is Convergo's: the part of a reconcile's time spent waiting for a place in
	// its lane (controller-runtime's reconcile time includes it).
	placeWaitMetric = "convergo_reconcile_wait_seconds"
)

// reconcileStats is what the controllers of the process have done so far.
type reconcileStats struct {
	// count is the number of finished reconciles.
	count int
	// seconds is the time spent in them; waitSeconds the part of it spent waiting for a place.
	seconds, waitSeconds float64
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
// process collector reads several files of /proc at every gather. When the restart phase gathered
// the registry every 20 ms to check its goal, they took 7% of the CPU of the process under
// measurement (the manager's and the driver's) during a restart.
var quietRegistry = sync.OnceFunc(func() {
	ctrlmetrics.Registry.Unregister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ctrlmetrics.Registry.Unregister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsAll)))
})

// reconcileCount returns the number of finished reconciles of every controller of the process, as
// reconciles().count, read from controller-runtime's reconcile counter alone when registeredCounter
// finds it (a few microseconds, against about a millisecond for a gather of the whole registry), so
// that the restart's goal can be checked every restartPollInterval without taking CPU from the
// manager under measurement.
func reconcileCount() (int, error) {
	if total, err := reconcileTotal(); err == nil {
		return countOf(total)
	}
	s, err := reconciles()
	return s.count, err
}

// reconcileTotal is controller-runtime's counter of finished reconciles, as registered in its
// registry.
var reconcileTotal = sync.OnceValues(func() (prometheus.Collector, error) {
	return registeredCounter(ctrlmetrics.Registry, prometheus.CounterOpts{
		Name: reconcileTotalMetric,
		Help: "Total number of reconciliations per controller",
	}, "controller", "result")
})

// registeredCounter returns the counter vector reg holds under opts and labels: registering an equal
// one is refused with the one registered. The help and labels must be those of the registered counter
// (controller-runtime's, for reconcileTotal); anything else is an error.
func registeredCounter(reg prometheus.Registerer, opts prometheus.CounterOpts, labels ...string) (prometheus.Collector, error) {
	probe := prometheus.NewCounterVec(opts, labels)
	err := reg.Register(probe)
	if err == nil {
		reg.Unregister(probe)
		return nil, fmt.Errorf("counter %s is not registered", opts.Name)
	}
	var already prometheus.AlreadyRegisteredError
	if !errors.As(err, &already) {
		return nil, fmt.Errorf("find counter %s: %w", opts.Name, err)
	}
	return already.ExistingCollector, nil
}

// countOf sums the values of the counters c collects.
func countOf(c prometheus.Collector) (int, error) {
	metrics := make(chan prometheus.Metric)
	go func() {
		c.Collect(metrics)
		close(metrics)
	}()
	var total float64
	var err error
	for m := range metrics {
		var out dto.Metric
		if werr := m.Write(&out); werr != nil {
			err = fmt.Errorf("read counter: %w", werr)
			continue
		}
		total += out.GetCounter().GetValue()
	}
	return int(total), err
}

// statsFrom sums the reconcile_total counters and the reconcile_time_seconds and
// convergo_reconcile_wait_seconds histograms gathered from g.
func statsFrom(g prometheus.Gatherer) (reconcileStats, error) {
	families, err := g.Gather()
	if err != nil {
		return reconcileStats{}, fmt.Errorf("gather controller metrics: %w", err)
	}
	var total, seconds, wait float64
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
		case placeWaitMetric:
			for _, m := range f.GetMetric() {
				wait += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return reconcileStats{count: int(total), seconds: seconds, waitSeconds: wait}, nil
}
