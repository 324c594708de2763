package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

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
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		var into map[string]float64
		rest, ok := strings.CutPrefix(line, workDurationMetric+"_count{")
		if ok {
			into = w.syncs
		} else if rest, ok = strings.CutPrefix(line, workDurationMetric+"_sum{"); ok {
			into = w.seconds
		} else {
			continue
		}
		labelText, valueText, ok := strings.Cut(rest, "} ")
		if !ok {
			return queueWork{}, fmt.Errorf("parse %s sample %q: no end of labels", workDurationMetric, line)
		}
		labels, err := parseLabels(labelText)
		if err != nil {
			return queueWork{}, fmt.Errorf("parse %s sample %q: %w", workDurationMetric, line, err)
		}
		valueText, _, _ = strings.Cut(valueText, " ") // a timestamp may follow
		v, err := strconv.ParseFloat(valueText, 64)
		if err != nil {
			return queueWork{}, fmt.Errorf("parse %s sample %q: %w", workDurationMetric, line, err)
		}
		into[labels["name"]] += v
	}
	if err := sc.Err(); err != nil {
		return queueWork{}, fmt.Errorf("read %s: %w", workDurationMetric, err)
	}
	return w, nil
}

// since returns what the queues processed after before: the syncs and their seconds per queue,
// leaving out queues that processed nothing.
func (w queueWork) since(before queueWork) (map[string]int, map[string]float64) {
	syncs, seconds := map[string]int{}, map[string]float64{}
	for name, n := range w.syncs {
		if d := n - before.syncs[name]; d > 0 {
			syncs[name] = int(d + 0.5)
			seconds[name] = w.seconds[name] - before.seconds[name]
		}
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
