package bench

import (
	"context"

	"github.com/convergo-dev/convergo/testing/cluster"
)

// workDurationMetric is client-go's histogram of the time each item of a controller's work queue
// took to process, by queue name: its _count is the number of syncs, its _sum their time.
const workDurationMetric = "workqueue_work_duration_seconds"

// queueWork is what a controller-manager's work queues had processed, by queue name.
type queueWork struct {
	syncs   map[string]float64
	seconds map[string]float64
}

// parseQueueWork reads the _count and _sum samples of workDurationMetric in Prometheus text
// exposition.
func parseQueueWork(text []byte) (queueWork, error) {
	w := queueWork{syncs: map[string]float64{}, seconds: map[string]float64{}}
	count, sum := workDurationMetric+"_count", workDurationMetric+"_sum"
	err := eachSample(text, workDurationMetric, []string{count, sum}, func(name string, labels map[string]string, v float64) {
		if name == count {
			w.syncs[labels["name"]] += v
		} else {
			w.seconds[labels["name"]] += v
		}
	})
	if err != nil {
		return queueWork{}, err
	}
	return w, nil
}

// since returns what the queues processed after before: the syncs and their seconds per queue,
// leaving out queues that processed nothing.
func (w queueWork) since(before queueWork) (map[string]int, map[string]float64) {
	syncs, seconds := countsSince(before.syncs, w.syncs), map[string]float64{}
	for name := range syncs {
		seconds[name] = w.seconds[name] - before.seconds[name]
	}
	return syncs, seconds
}

// controllerWork reads what kube-controller-manager's work queues have processed so far, or nil,
// logged, when there is no controller-manager to ask or its metrics cannot be read: the figures are
// left out, the phase goes on.
func (r *run) controllerWork(ctx context.Context) *queueWork {
	c := r.env.Cluster()
	if c == nil {
		return nil
	}
	text, err := c.Metrics(ctx, cluster.ControllerManager)
	if err == nil {
		var w queueWork
		if w, err = parseQueueWork(text); err == nil {
			return &w
		}
	}
	r.log.Error(err, "the controller-manager's syncs are left out of the phase")
	return nil
}
