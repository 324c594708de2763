package reconcile

import (
	"sync"
	"time"

	"github.com/convergo-dev/convergo/internal/telemetry"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// Reconcile results counted in convergo_reconcile_results_total.
const (
	resultReady     = "ready"
	resultWaiting   = "waiting"
	resultStalled   = "stalled"
	resultError     = "error"
	resultDeleting  = "deleting"
	resultFinalized = "finalized"
)

// The Reconciler's metrics, registered once on controller-runtime's registry (served by the manager's
// metrics endpoint next to controller-runtime's own).
var (
	childOperationsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convergo_child_operations_total",
		Help: "Child operations by controller, child kind and operation (Created, Updated, Unchanged, Recreated, Deleted).",
	}, []string{"controller", "kind", "operation"})

	reconcileResultsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convergo_reconcile_results_total",
		Help: "Reconcile outcomes by controller: ready, waiting, stalled, error, deleting, finalized, suspended.",
	}, []string{"controller", "result"})

	finalizingObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "convergo_finalizing_objects",
		Help: "Objects whose deletion is in progress (children, cleanup or finalizer still pending), by controller.",
	}, []string{"controller"})

	deletionStepsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convergo_deletion_steps_total",
		Help: "Deletion progress by controller, step (children, cleanup, finalizer) and result (done, waiting, error).",
	}, []string{"controller", "step", "result"})

	reconcileTriggersTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convergo_reconcile_triggers_total",
		Help: "Reconciles by controller and trigger: start-up, created, changed, child, watch, shard, requeue, external, interval, poll, retry, unknown.",
	}, []string{"controller", "trigger"})

	nodeWritesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convergo_node_writes_total",
		Help: "Writes by controller, graph node and operation (Created, Updated: a drift repaired or a spec change applied, Recreated, Deleted).",
	}, []string{"controller", "node", "operation"})

	driftRepairsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convergo_drift_repairs_total",
		Help: "Children written back to the intent their owner's spec, already applied, gives them (someone else changed them), by controller and graph node.",
	}, []string{"controller", "node"})

	deletionSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "convergo_deletion_duration_seconds",
		Help:    "Time from an object's deletion timestamp to the removal of the Reconciler's finalizer, by controller.",
		Buckets: prometheus.ExponentialBuckets(0.05, 3, 10), // 50 ms to about 16 min
	}, []string{"controller"})

	placeWaitSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "convergo_reconcile_wait_seconds",
		Help: "Time a reconcile waited for a place in its lane (deleting: objects being deleted; others), by controller. " +
			"controller-runtime's controller_runtime_reconcile_time_seconds includes it.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10), // 1 ms to about 4 min
	}, []string{"controller", "lane"})

	objectsByCondition = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "convergo_objects",
		Help: "Objects by controller and the condition that is True after their last reconcile: Ready, Reconciling, Stalled (none: Unknown).",
	}, []string{"controller", "condition"})

	registerMetricsOnce sync.Once
)

// registerMetrics adds the collectors to controller-runtime's registry once per process. A collector
// someone else registered under the same name is left in place.
func registerMetrics() {
	registerMetricsOnce.Do(func() {
		telemetry.Register(childOperationsTotal, reconcileResultsTotal, finalizingObjects, deletionStepsTotal, reconcileTriggersTotal,
			nodeWritesTotal, driftRepairsTotal, deletionSeconds, placeWaitSeconds, objectsByCondition)
	})
}

// reconcilerMetrics records one controller's metrics.
type reconcilerMetrics struct {
	controller string

	mu         sync.Mutex
	conditions map[types.NamespacedName]string // the condition of each object, for convergo_objects
}

func newReconcilerMetrics(controller string) *reconcilerMetrics {
	registerMetrics()
	return &reconcilerMetrics{controller: controller, conditions: map[types.NamespacedName]string{}}
}

func (m *reconcilerMetrics) nodeWrite(node, op string) {
	nodeWritesTotal.WithLabelValues(m.controller, node, op).Inc()
}

func (m *reconcilerMetrics) driftRepair(node string) {
	driftRepairsTotal.WithLabelValues(m.controller, node).Inc()
}

// Lanes of convergo_reconcile_wait_seconds.
const (
	laneDeleting = "deleting"
	laneOthers   = "others"
)

// placeTaken records in convergo_reconcile_wait_seconds that a reconcile waited d for a place in the
// deleting lane or the others'.
func (m *reconcilerMetrics) placeTaken(deleting bool, d time.Duration) {
	lane := laneOthers
	if deleting {
		lane = laneDeleting
	}
	placeWaitSeconds.WithLabelValues(m.controller, lane).Observe(d.Seconds())
}

func (m *reconcilerMetrics) deleted(after time.Duration) {
	deletionSeconds.WithLabelValues(m.controller).Observe(after.Seconds())
}

// condition records which condition of key is True ("" when the object is gone) in convergo_objects.
func (m *reconcilerMetrics) condition(key types.NamespacedName, cond string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	before, had := m.conditions[key]
	if had && before == cond {
		return
	}
	if had {
		objectsByCondition.WithLabelValues(m.controller, before).Dec()
	}
	if cond == "" {
		delete(m.conditions, key)
		return
	}
	m.conditions[key] = cond
	objectsByCondition.WithLabelValues(m.controller, cond).Inc()
}

func (m *reconcilerMetrics) childOperation(kind, op string) {
	childOperationsTotal.WithLabelValues(m.controller, kind, op).Inc()
}

func (m *reconcilerMetrics) result(result string) {
	reconcileResultsTotal.WithLabelValues(m.controller, result).Inc()
}

func (m *reconcilerMetrics) trigger(why string) {
	reconcileTriggersTotal.WithLabelValues(m.controller, why).Inc()
}

func (m *reconcilerMetrics) deletionStep(step, result string) {
	deletionStepsTotal.WithLabelValues(m.controller, step, result).Inc()
}

func (m *reconcilerMetrics) finalizing(n int) {
	finalizingObjects.WithLabelValues(m.controller).Set(float64(n))
}
