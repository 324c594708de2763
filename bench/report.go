package bench

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/convergo-dev/convergo/testing/harness"
)

// Phase is what one implementation did in one phase of the bench.
type Phase struct {
	// Seconds is the time from the start of the phase to its goal: every Welcome Ready (converge,
	// update), every Welcome reconciled again (restart), every Welcome and child gone (delete).
	Seconds float64 `json:"seconds"`
	// SettledSeconds is the time from the start of the phase to the manager's last request or
	// reconcile before it went quiet.
	SettledSeconds float64 `json:"settledSeconds"`
	// Requests is the number of API requests the manager made, counted client side until it went
	// quiet.
	Requests int `json:"requests"`
	// ByVerb counts the requests per verb (get, list, watch, create, update, patch, delete; the
	// lower-case HTTP method for non-resource requests such as discovery).
	ByVerb map[string]int `json:"byVerb"`
	// Writes counts the write requests (create, update, patch, delete, deletecollection) per
	// "verb resource[/subresource]", e.g. "patch welcomes/status".
	Writes map[string]int `json:"writes"`
	// Reconciles is the number of reconciles the manager finished.
	Reconciles int `json:"reconciles"`
	// ReconcileSeconds is the time the manager spent in those reconciles (controller-runtime's
	// reconcile_time_seconds), in total over its workers.
	ReconcileSeconds float64 `json:"reconcileSeconds"`
	// PlaceWaitSeconds is the part of ReconcileSeconds that reconciles spent waiting for a place in
	// their lane (Convergo's convergo_reconcile_wait_seconds; 0 for the others).
	PlaceWaitSeconds float64 `json:"placeWaitSeconds,omitempty"`
	// MeanLatencySeconds is the mean time per verb from sending a request to its response headers.
	MeanLatencySeconds map[string]float64 `json:"meanLatencySeconds,omitempty"`
	// DrainedSeconds is, for delete, the time from the start of the phase until the garbage
	// collector had also deleted the ReplicaSets and Pods of the deleted Deployments (0 in the other
	// phases).
	DrainedSeconds float64 `json:"drainedSeconds,omitempty"`
	// ServerCPUSeconds is the CPU time kube-apiserver, etcd, kube-controller-manager, kube-scheduler
	// and kwok (by component name) used from the start of the phase until the manager went quiet
	// and, for delete, the garbage collector had finished (DrainedSeconds): the load the phase put on
	// the control plane, steadier than wall-clock time on a busy machine. The API server's includes
	// the requests of the other components the phase set off (Deployments rolling out, the garbage
	// collector), which are the same for every implementation. "manager process" is the bench
	// process's own CPU time: the manager under measurement and the driver; "machine" is every
	// process of the machine together.
	ServerCPUSeconds map[string]float64 `json:"serverCPUSeconds,omitempty"`
	// ServerCPUAboveIdleSeconds is, per component of ServerCPUSeconds, its CPU time beyond what the
	// component uses idle (Result.IdleCPUPerSecond) over a window as long as the phase's: the work of
	// the phase without the background, which would otherwise weigh more in a longer phase.
	ServerCPUAboveIdleSeconds map[string]float64 `json:"serverCPUAboveIdleSeconds,omitempty"`
	// BusyCores is the machine's CPU time from the start of the phase to its goal divided by that time
	// (Seconds): how many cores every process together kept busy on average. Near the machine's core
	// count, the phase was bound by the CPU, and its time follows the CPU every process used, not the
	// latency of any one request.
	BusyCores float64 `json:"busyCores,omitempty"`
	// ClusterWrites counts the writes kube-apiserver served from the start of the phase until the
	// manager went quiet, whoever sent them (the manager, the driver, the controller manager, the
	// scheduler, kwok), per "verb resource[/subresource]", " (code)" appended to those that failed;
	// "apply" is a server-side apply. Writes the implementation made others make (a ReplicaSet
	// updated, a pod created) show here and not in Writes.
	ClusterWrites map[string]int `json:"clusterWrites,omitempty"`
	// ControllerSyncs counts the items kube-controller-manager's work queues processed from the
	// start of the phase until the manager went quiet (client-go's workqueue_work_duration_seconds),
	// by queue name ("deployment", "replicaset", "endpoint_slice", "garbage_collector_attempt_to_delete"):
	// how often each controller synced an object. A queue merges the events that arrive while an
	// object waits in it, so the same writes cost a controller more syncs when they come spread out.
	ControllerSyncs map[string]int `json:"controllerSyncs,omitempty"`
	// ControllerSyncSeconds is the time those syncs took, by queue name, waits for the API server
	// included.
	ControllerSyncSeconds map[string]float64 `json:"controllerSyncSeconds,omitempty"`
}

// WriteCount returns the number of write requests.
func (p Phase) WriteCount() int { return sumCounts(p.Writes) }

// NewPhase summarizes recorded requests; seconds and settled are the phase's durations.
func NewPhase(reqs harness.Requests, seconds, settled time.Duration, reconciles int) Phase {
	p := Phase{
		Seconds:        seconds.Seconds(),
		SettledSeconds: settled.Seconds(),
		Requests:       len(reqs),
		ByVerb:         reqs.ByVerb(),
		Writes:         map[string]int{},
		Reconciles:     reconciles,
	}
	for _, r := range reqs {
		if r.IsWrite() {
			p.Writes[r.Verb+" "+r.FullResource()]++
		}
	}
	return p
}

// Memory is the heap a manager holding the converged objects uses beyond the same manager before they
// were created.
type Memory struct {
	// HeapInuseBytes is the growth of runtime.MemStats.HeapInuse after a garbage collection.
	HeapInuseBytes int64 `json:"heapInuseBytes"`
	// HeapAllocBytes is the growth of runtime.MemStats.HeapAlloc (live objects) after a garbage
	// collection.
	HeapAllocBytes int64 `json:"heapAllocBytes"`
	// ForeignBytes is the growth of the live heap when ForeignObjects objects of the children's kinds
	// that are not the implementation's (another field manager, no owner of its kind) are created in its
	// namespace, divided by ForeignObjects: what an object someone else owns costs the operator.
	ForeignBytes float64 `json:"foreignBytesPerObject"`
	// ForeignObjects is how many such objects were created.
	ForeignObjects int `json:"foreignObjects"`
}

// Result is the measurement of one implementation.
type Result struct {
	// Implementation names it ("convergo", "baseline").
	Implementation string `json:"implementation"`
	// Description says how the implementation was configured, e.g. its number of workers.
	Description string `json:"description,omitempty"`
	// Round numbers the measurement from 1 in Report.Runs; it is 0 in Report.Results, which hold
	// medians over the rounds.
	Round int `json:"round,omitempty"`
	// Converge: N Welcomes created at once, until all are Ready.
	Converge Phase `json:"converge"`
	// Restart: a fresh manager (fresh cache) until every Welcome was reconciled again.
	Restart Phase `json:"restart"`
	// RestartFloor, with WithFloor, is the restart of a receiver on the implementation's objects,
	// measured right after Restart: a manager that only lists and watches the Welcomes and their
	// children and reads each Welcome once: the shortest restart of an operator that lists them whole.
	RestartFloor *Phase `json:"restartFloor,omitempty"`
	// RestartSeconds is the time of each restart the round measured (WithRestarts), in order; Restart
	// holds their medians. In Report.Results it lists the restarts of every round.
	RestartSeconds []float64 `json:"restartSeconds,omitempty"`
	// RestartFloorSeconds is, with WithFloor, the time of each of the receiver's restarts, in order.
	RestartFloorSeconds []float64 `json:"restartFloorSeconds,omitempty"`
	// Update: spec.replicas changed on every Welcome, until all are Ready again.
	Update Phase `json:"update"`
	// Delete: every Welcome deleted, until no Welcome and no child is left.
	Delete Phase `json:"delete"`
	// Memory is measured after convergence.
	Memory Memory `json:"memory"`
	// IdleCPUPerSecond is the CPU seconds per second each component (see ServerCPUSeconds) used while
	// nothing happened, before the converge phase: the manager started and quiet, no object of the
	// implementation's left.
	IdleCPUPerSecond map[string]float64 `json:"idleCPUPerSecond,omitempty"`
}

// Report is the outcome of a bench run.
type Report struct {
	// N is the number of Welcome objects per implementation.
	N int `json:"n"`
	// Nodes is the number of fake nodes of the cluster.
	Nodes int `json:"nodes"`
	// Rounds is how many times each implementation was measured.
	Rounds int `json:"rounds"`
	// Restarts is how many times each round measured the restart phase (WithRestarts).
	Restarts int `json:"restarts,omitempty"`
	// Started is when the run began.
	Started time.Time `json:"started"`
	// GoVersion is the Go version the bench was built with.
	GoVersion string `json:"goVersion"`
	// Command is the command line that produced the report.
	Command string `json:"command,omitempty"`
	// WarmUp is what the warm-up measured, on the fresh cluster.
	WarmUp ByHand `json:"warmUp"`
	// Floor, with WithFloor, is N Deployments rolled out by hand once the cluster is warm.
	Floor *ByHand `json:"floor,omitempty"`
	// WithoutRollout is set when the cluster ran without the controllers that act on the children (see
	// WithoutRollout): the converge and update phases end when every Welcome's status is written for
	// its generation, not when it is Ready.
	WithoutRollout bool `json:"withoutRollout,omitempty"`
	// Results holds one entry per implementation, in the order given to Run, each figure the median
	// over the rounds.
	Results []Result `json:"results"`
	// Runs holds every measurement, in the order they ran.
	Runs []Result `json:"runs,omitempty"`
}

// ByHand is a batch of Deployments (one pod each, with a ConfigMap beside each) created by the driver
// at once, with no operator running.
type ByHand struct {
	// Deployments is how many it created.
	Deployments int `json:"deployments"`
	// AvailableSeconds is the time from the first create until all were available (0 without
	// rollout).
	AvailableSeconds float64 `json:"availableSeconds,omitempty"`
	// ScaledSeconds is the time from the first patch of their replicas until all had the new number
	// available (0 when they were not scaled).
	ScaledSeconds float64 `json:"scaledSeconds,omitempty"`
	// AvailableCPU is the CPU time, in seconds, each component (serverComponents, machineComponent,
	// processComponent) spent from the first create until all were available; nil without rollout.
	AvailableCPU map[string]float64 `json:"availableCPU,omitempty"`
	// ScaledCPU is the same from the first patch of their replicas until all were scaled; nil when
	// they were not scaled.
	ScaledCPU map[string]float64 `json:"scaledCPU,omitempty"`
}

// Row is one line of the comparison: a metric with one value per implementation.
type Row struct {
	// Metric names the figure, e.g. "converge: requests".
	Metric string `json:"metric"`
	// Unit is "s", "per CR" or "KiB per CR".
	Unit string `json:"unit"`
	// Values maps an implementation to its figure.
	Values map[string]float64 `json:"values"`
	// Ratio is the ratio of the first ratio column (see Ratios): with the expert measured, the first
	// other implementation's value divided by the expert's; without it and with exactly two
	// implementations, the first one's value divided by the second's. It is nil when there is no
	// ratio column or the divisor is zero.
	Ratio *float64 `json:"ratio"`
	// Ratios maps each ratio column ("convergo/expert", see Report.RatioColumns) to the compared
	// implementation's value divided by the reference's; a column is missing where the reference's
	// value is zero.
	Ratios map[string]float64 `json:"ratios,omitempty"`
}

// ReferenceImplementation is the implementation the others are measured against when it is among the
// results: the Welcome operator an expert writes by hand (package expert).
const ReferenceImplementation = "expert"

// RatioColumn is one ratio column of the comparison: Compared's value divided by Reference's.
type RatioColumn struct {
	Compared, Reference string
}

// Label names the column, "convergo/expert".
func (c RatioColumn) Label() string { return c.Compared + "/" + c.Reference }

// RatioColumns returns the ratio columns of the comparison. With ReferenceImplementation among the
// results, every other implementation is divided by it, in run order; otherwise, with exactly two
// implementations, the first is divided by the second; otherwise there is none.
func (r *Report) RatioColumns() []RatioColumn {
	names := r.implementations()
	if slices.Contains(names, ReferenceImplementation) {
		var cols []RatioColumn
		for _, name := range names {
			if name != ReferenceImplementation {
				cols = append(cols, RatioColumn{Compared: name, Reference: ReferenceImplementation})
			}
		}
		return cols
	}
	if len(names) == 2 {
		return []RatioColumn{{Compared: names[0], Reference: names[1]}}
	}
	return nil
}

// Ratio returns a/b, and false when b is zero (no meaningful ratio).
func Ratio(a, b float64) (float64, bool) {
	if b == 0 {
		return 0, false
	}
	return a / b, true
}

// verbOrder is the order of verb rows; other verbs follow alphabetically.
var verbOrder = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// Rows returns the comparison rows: for each phase its time, requests per CR in total and per verb
// (verbs no implementation used are left out) and writes per CR; for convergence also the writes per
// verb and resource; after the restart's, the restart floor's when measured (WithFloor); then the
// memory per CR. Each row holds every implementation's value and the ratios of RatioColumns.
func (r *Report) Rows() []Row {
	var rows []Row
	n := float64(max(r.N, 1))
	cols := r.RatioColumns()
	add := func(metric, unit string, value func(Result) float64) {
		row := Row{Metric: metric, Unit: unit, Values: map[string]float64{}}
		for _, res := range r.Results {
			row.Values[res.Implementation] = value(res)
		}
		for i, col := range cols {
			q, ok := Ratio(row.Values[col.Compared], row.Values[col.Reference])
			if !ok {
				continue
			}
			if row.Ratios == nil {
				row.Ratios = map[string]float64{}
			}
			row.Ratios[col.Label()] = q
			if i == 0 {
				row.Ratio = &q
			}
		}
		rows = append(rows, row)
	}
	readyGoal := "time until all Ready"
	if r.WithoutRollout {
		readyGoal = "time until all status written"
	}
	phases := []struct {
		name, goal string
		get        func(Result) Phase
	}{
		{"converge", readyGoal, func(x Result) Phase { return x.Converge }},
		{"restart", "time until all reconciled", func(x Result) Phase { return x.Restart }},
		{"update", readyGoal, func(x Result) Phase { return x.Update }},
		{"delete", "time until all children gone", func(x Result) Phase { return x.Delete }},
	}
	for _, ph := range phases {
		get := ph.get
		add(ph.name+": "+ph.goal, "s", func(x Result) float64 { return get(x).Seconds })
		if ph.name == "delete" && r.anyResult(func(x Result) bool { return x.Delete.DrainedSeconds > 0 }) {
			add(ph.name+": time until the garbage collector is done", "s", func(x Result) float64 { return get(x).DrainedSeconds })
		}
		add(ph.name+": requests", "per CR", func(x Result) float64 { return float64(get(x).Requests) / n })
		for _, verb := range r.verbs(get) {
			add(ph.name+": "+verb, "per CR", func(x Result) float64 { return float64(get(x).ByVerb[verb]) / n })
		}
		add(ph.name+": writes", "per CR", func(x Result) float64 { return float64(get(x).WriteCount()) / n })
		if ph.name == "converge" {
			for _, w := range r.writeKinds(get) {
				add(ph.name+": "+w, "per CR", func(x Result) float64 { return float64(get(x).Writes[w]) / n })
			}
		}
		if r.anyResult(func(x Result) bool { return get(x).ClusterWrites != nil }) {
			add(ph.name+": cluster writes", "per CR", func(x Result) float64 { return float64(sumCounts(get(x).ClusterWrites)) / n })
			if ph.name != "restart" {
				for _, w := range r.frequentKeys(func(x Result) map[string]int { return get(x).ClusterWrites }, n) {
					add(ph.name+": cluster "+w, "per CR", func(x Result) float64 { return float64(get(x).ClusterWrites[w]) / n })
				}
			}
		}
		if ph.name != "restart" {
			for _, q := range r.frequentKeys(func(x Result) map[string]int { return get(x).ControllerSyncs }, n) {
				add(ph.name+": kube-controller-manager syncs "+q, "per CR", func(x Result) float64 { return float64(get(x).ControllerSyncs[q]) / n })
				add(ph.name+": kube-controller-manager time in syncs "+q, "ms per CR", func(x Result) float64 {
					return get(x).ControllerSyncSeconds[q] * 1000 / n
				})
			}
		}
		add(ph.name+": reconciles", "per CR", func(x Result) float64 { return float64(get(x).Reconciles) / n })
		add(ph.name+": time in reconciles", "ms per CR", func(x Result) float64 { return get(x).ReconcileSeconds * 1000 / n })
		if r.anyResult(func(x Result) bool { return get(x).PlaceWaitSeconds > 0 }) {
			add(ph.name+": of which waiting for a place", "ms per CR", func(x Result) float64 { return get(x).PlaceWaitSeconds * 1000 / n })
		}
		for _, comp := range cpuComponents {
			if r.anyResult(func(x Result) bool { _, ok := get(x).ServerCPUSeconds[comp]; return ok }) {
				add(ph.name+": "+comp+" CPU", "ms per CR", func(x Result) float64 { return get(x).ServerCPUSeconds[comp] * 1000 / n })
			}
		}
		if r.anyResult(func(x Result) bool { return get(x).BusyCores > 0 }) {
			add(ph.name+": CPU in use", "cores", func(x Result) float64 { return get(x).BusyCores })
		}
		if r.anyResult(func(x Result) bool { _, ok := get(x).ServerCPUAboveIdleSeconds[aboveIdleComponent]; return ok }) {
			add(ph.name+": "+aboveIdleComponent+" CPU above idle", "ms per CR", func(x Result) float64 {
				return get(x).ServerCPUAboveIdleSeconds[aboveIdleComponent] * 1000 / n
			})
		}
		if ph.name == "converge" {
			for _, verb := range r.verbs(get) {
				if verb == "watch" {
					continue
				}
				add(ph.name+": mean "+verb+" latency", "ms", func(x Result) float64 { return get(x).MeanLatencySeconds[verb] * 1000 })
			}
			for _, w := range r.writeKinds(get) {
				add(ph.name+": mean "+w+" latency", "ms", func(x Result) float64 { return get(x).MeanLatencySeconds[w] * 1000 })
			}
		}
		if ph.name == "restart" && r.anyResult(func(x Result) bool { return x.RestartFloor != nil }) {
			floor := func(x Result) Phase {
				if x.RestartFloor == nil {
					return Phase{}
				}
				return *x.RestartFloor
			}
			add(restartFloorMetric, "s", func(x Result) float64 { return floor(x).Seconds })
			for _, comp := range []string{aboveIdleComponent, processComponent, machineComponent} {
				add("restart floor: "+comp+" CPU", "ms per CR", func(x Result) float64 { return floor(x).ServerCPUSeconds[comp] * 1000 / n })
			}
			add("restart floor: CPU in use", "cores", func(x Result) float64 { return floor(x).BusyCores })
		}
	}
	if r.anyResult(func(x Result) bool { _, ok := x.IdleCPUPerSecond[aboveIdleComponent]; return ok }) {
		add("idle: "+aboveIdleComponent+" CPU", "ms per s", func(x Result) float64 { return x.IdleCPUPerSecond[aboveIdleComponent] * 1000 })
	}
	add("memory: heap in use", "KiB per CR", func(x Result) float64 { return float64(x.Memory.HeapInuseBytes) / 1024 / n })
	add("memory: live heap", "KiB per CR", func(x Result) float64 { return float64(x.Memory.HeapAllocBytes) / 1024 / n })
	add("memory: an object that is not ours", "bytes per object", func(x Result) float64 { return x.Memory.ForeignBytes })
	return rows
}

// serverComponents are the control-plane components whose CPU time the bench reports. The
// controller manager's, the scheduler's and kwok's work (Deployments rolling out, pods scheduled and
// started, the garbage collector) is set off by the phase and should be the same for every
// implementation; a difference there means the implementation made them work more.
var serverComponents = []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok"}

// processComponent names, among the CPU figures, the bench process itself: the manager under
// measurement, plus the driver's requests and watches, which are the same for every implementation.
const processComponent = "manager process"

// machineComponent names, among the CPU figures, every process of the machine together (the busy
// time of /proc/stat): the control plane, the bench process and anything else that ran.
const machineComponent = "machine"

// cpuComponents are the CPU figures of a phase, in the order the report shows them.
var cpuComponents = append(slices.Clone(serverComponents), processComponent, machineComponent)

// aboveIdleComponent is the component whose CPU above idle the report shows: the API server, the
// figure of issue #18's targets.
const aboveIdleComponent = "kube-apiserver"

// restartFloorMetric names the row of the receiver's restart on each implementation's objects
// (Result.RestartFloor).
const restartFloorMetric = "restart floor: time until all reconciled by a receiver"

// anyResult reports whether has holds for the figures of any implementation: rows of figures that
// older reports or some runs lack are left out.
func (r *Report) anyResult(has func(Result) bool) bool {
	return slices.ContainsFunc(r.Results, has)
}

// verbs returns the verbs any implementation used in a phase, in verbOrder, then the others sorted.
func (r *Report) verbs(get func(Result) Phase) []string {
	used := map[string]bool{}
	for _, res := range r.Results {
		for v, c := range get(res).ByVerb {
			if c > 0 {
				used[v] = true
			}
		}
	}
	var out []string
	for _, v := range verbOrder {
		if used[v] {
			out = append(out, v)
			delete(used, v)
		}
	}
	return append(out, slices.Sorted(maps.Keys(used))...)
}

// writeKinds returns the "verb resource" write kinds any implementation made in a phase, sorted.
func (r *Report) writeKinds(get func(Result) Phase) []string {
	used := map[string]bool{}
	for _, res := range r.Results {
		for k, c := range get(res).Writes {
			if c > 0 {
				used[k] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(used))
}

// frequentKeys returns the keys of the counts of which some implementation's phase had at least one in
// 20 per CR, sorted: the cluster's background (leases, node heartbeats) and its rare work stay out.
func (r *Report) frequentKeys(counts func(Result) map[string]int, n float64) []string {
	used := map[string]bool{}
	for _, res := range r.Results {
		for k, c := range counts(res) {
			if float64(c)/n >= 0.05 {
				used[k] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(used))
}

// sumCounts returns the sum of the counts of m.
func sumCounts(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// implementations returns the implementation names in run order.
func (r *Report) implementations() []string {
	names := make([]string, len(r.Results))
	for i, res := range r.Results {
		names[i] = res.Implementation
	}
	return names
}

// reportJSON is the JSON shape of a report: its data plus the comparison rows.
type reportJSON struct {
	*Report
	Implementations []string `json:"implementations"`
	// RatioColumns are the labels of the rows' ratios, "convergo/expert".
	RatioColumns []string `json:"ratioColumns,omitempty"`
	Rows         []Row    `json:"rows"`
}

// JSON returns the report as indented JSON: the run's parameters, every implementation's raw
// figures (results), the labels of the ratio columns (ratioColumns) and the comparison rows of the
// markdown table (rows).
func (r *Report) JSON() ([]byte, error) {
	var labels []string
	for _, col := range r.RatioColumns() {
		labels = append(labels, col.Label())
	}
	out, err := json.MarshalIndent(reportJSON{Report: r, Implementations: r.implementations(), RatioColumns: labels, Rows: r.Rows()}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	return append(out, '\n'), nil
}

// Markdown renders the report: a heading with the run's parameters, the comparison table (one column
// per implementation, then one per ratio column: every other implementation against the expert when
// it ran, else, with exactly two implementations, the first against the second), and the targets of
// the bench with the achieved figures when "convergo" and "baseline" both ran.
func (r *Report) Markdown() string {
	var b strings.Builder
	names := r.implementations()
	fmt.Fprintf(&b, "# Convergo bench: %d Welcomes, %d nodes\n\n", r.N, r.Nodes)
	fmt.Fprintf(&b, "Run %s with %s.", r.Started.UTC().Format(time.RFC3339), r.GoVersion)
	if r.Command != "" {
		fmt.Fprintf(&b, " Command: `%s`.", r.Command)
	}
	if r.Rounds > 1 {
		fmt.Fprintf(&b, " Each figure is the median of %d rounds (the order of the implementations alternates).", r.Rounds)
	}
	if r.Restarts > 1 {
		fmt.Fprintf(&b, " Each round restarts each manager %d times, one after the other; the round's restart figures are their medians.", r.Restarts)
	}
	b.WriteString(" Requests are the manager's own, counted client side; \"per CR\" divides by N.\n\n")
	if r.WarmUp.AvailableSeconds > 0 {
		fmt.Fprintf(&b, "Warm-up, on the fresh cluster: %d Deployments of one pod, each with a ConfigMap, created by the driver %d at a time "+
			"with no operator, were all available after %s s.\n\n", r.WarmUp.Deployments, DefaultWorkers, formatValue(r.WarmUp.AvailableSeconds))
	}
	if r.Floor != nil && r.Floor.AvailableSeconds > 0 {
		fmt.Fprintf(&b, "Floor, on the warmed cluster before the first measurement: %d Deployments created the same way were all available "+
			"after %s s: the cluster's own part of a converge phase of %d Welcomes, which no operator can shorten.\n\n",
			r.Floor.Deployments, formatValue(r.Floor.AvailableSeconds), r.N)
		b.WriteString(floorCPU(r.Floor.AvailableCPU, r.N))
		if r.Floor.ScaledSeconds > 0 {
			fmt.Fprintf(&b, "Scaled by hand in the same way to the update phase's replicas, they all had them available after %s s: "+
				"the cluster's own part of an update phase.\n\n", formatValue(r.Floor.ScaledSeconds))
			b.WriteString(floorCPU(r.Floor.ScaledCPU, r.N))
		}
	}
	if r.WithoutRollout {
		fmt.Fprintf(&b, "Without rollout: kube-controller-manager ran without %s (the garbage collector ran), so no Deployment "+
			"rolled out and no EndpointSlice was written; the figures are the managers' own requests and what they cost the "+
			"API server. Converge and update end when every Welcome has its three children and a Ready condition for its "+
			"generation; the targets, which are about a rollout, are not judged.\n\n", strings.Join(rolloutControllers, ", "))
	}
	described := false
	for _, res := range r.Results {
		if res.Description != "" {
			fmt.Fprintf(&b, "- %s: %s\n", res.Implementation, res.Description)
			described = true
		}
	}
	if described {
		b.WriteString("\n")
	}

	cols := r.RatioColumns()
	header := append([]string{"metric"}, names...)
	for _, col := range cols {
		header = append(header, col.Label())
	}
	b.WriteString("| " + strings.Join(header, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat(" --- |", 1) + strings.Repeat(" ---: |", len(header)-1) + "\n")
	for _, row := range r.Rows() {
		cells := []string{row.Metric + " (" + row.Unit + ")"}
		for _, name := range names {
			cells = append(cells, formatValue(row.Values[name]))
		}
		for _, col := range cols {
			var q *float64
			if v, ok := row.Ratios[col.Label()]; ok {
				q = &v
			}
			cells = append(cells, formatRatio(q))
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	b.WriteString(r.restartTimes())
	if r.WithoutRollout {
		return b.String() // the targets are about a rollout
	}
	if t := r.targets() + r.expertTargets(); t != "" {
		b.WriteString("\n## Targets\n\n")
		b.WriteString(t)
	}
	return b.String()
}

// restartTimes lists the time of every restart of each implementation (and of the receiver on its
// objects), round after round, when the rounds measured more restarts than one; "" otherwise.
func (r *Report) restartTimes() string {
	if r.Restarts < 2 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nEach restart, in the order measured (s):\n\n")
	list := func(seconds []float64) string {
		out := make([]string, len(seconds))
		for i, s := range seconds {
			out[i] = fmt.Sprintf("%.3f", s)
		}
		return strings.Join(out, ", ")
	}
	for _, res := range r.Results {
		if len(res.RestartSeconds) == 0 {
			continue
		}
		fmt.Fprintf(&b, "- %s: %s\n", res.Implementation, list(res.RestartSeconds))
		if len(res.RestartFloorSeconds) > 0 {
			fmt.Fprintf(&b, "- the receiver on %s's objects: %s\n", res.Implementation, list(res.RestartFloorSeconds))
		}
	}
	return b.String()
}

// targets renders the bench's targets with the achieved figures, "" unless both convergo and
// baseline ran.
func (r *Report) targets() string {
	var conv, base *Result
	for i := range r.Results {
		switch r.Results[i].Implementation {
		case "convergo":
			conv = &r.Results[i]
		case "baseline":
			base = &r.Results[i]
		}
	}
	if conv == nil || base == nil {
		return ""
	}
	n := float64(max(r.N, 1))
	perCR := func(v int) string { return formatValue(float64(v) / n) }
	var b strings.Builder
	fmt.Fprintf(&b, "- restart writes per CR = 0: convergo %s (baseline %s): %s\n",
		perCR(conv.Restart.WriteCount()), perCR(base.Restart.WriteCount()), verdict(conv.Restart.WriteCount() == 0))
	fmt.Fprintf(&b, "- converge time no worse than the baseline: convergo %ss, baseline %ss: %s\n",
		formatValue(conv.Converge.Seconds), formatValue(base.Converge.Seconds), verdict(conv.Converge.Seconds <= base.Converge.Seconds))
	c := classify(conv.Converge)
	minimal := c.children == 3*r.N && c.finalizer <= r.N && c.reads == 0 && c.other == 0
	fmt.Fprintf(&b, "- converge requests per CR no more than the job's minimum (3 child creates, 1 finalizer add unless the API server "+
		"adds it, the status writes that change something): convergo %s = %s child writes + %s finalizer writes + %s status writes + %s events + %s reads + %s other "+
		"(baseline %s): %s\n",
		perCR(conv.Converge.Requests), perCR(c.children), perCR(c.finalizer), perCR(c.status), perCR(c.events), perCR(c.reads), perCR(c.other),
		perCR(base.Converge.Requests), minimalVerdict(minimal, c.events))
	b.WriteString("  (a status write sends only what changed, so every one changes something; the restart phase shows none is sent when nothing changes)\n")
	return b.String()
}

// expertTargets are issue #18's targets against the expert's operator, with the achieved ratios; ""
// unless both convergo and expert ran.
func (r *Report) expertTargets() string {
	if names := r.implementations(); !slices.Contains(names, "convergo") || !slices.Contains(names, "expert") {
		return ""
	}
	rows := map[string]Row{}
	for _, row := range r.Rows() {
		rows[row.Metric] = row
	}
	// floors are the times WithFloor measured below a target's row, in its unit: what the cluster
	// takes by itself (converge, update) and what receiving the objects whole takes (restart).
	floors := map[string]floorNote{}
	if r.Floor != nil {
		floors["converge: time until all Ready"] = floorNote{r.Floor.AvailableSeconds, "the same number of Deployments created by hand, all available"}
		floors["update: time until all Ready"] = floorNote{r.Floor.ScaledSeconds, "those Deployments scaled by hand, all scaled"}
		floors["converge: kube-apiserver CPU"] = floorNote{perCRMillis(r.Floor.AvailableCPU, "kube-apiserver", r.N), "kube-apiserver while the Deployments created by hand became available"}
		floors["update: kube-apiserver CPU"] = floorNote{perCRMillis(r.Floor.ScaledCPU, "kube-apiserver", r.N), "kube-apiserver while they were scaled by hand"}
	}
	if floor, ok := rows[restartFloorMetric]; ok {
		floors["restart: time until all reconciled"] = floorNote{floor.Values["convergo"], "a receiver that only lists and watches the same objects whole, and reads each Welcome once, restarted on convergo's objects"}
	}
	var b strings.Builder
	for _, t := range []struct {
		metric string
		most   float64
	}{
		{"converge: time until all Ready", 0.9},
		{"converge: kube-apiserver CPU", 0.9},
		{"update: time until all Ready", 0.9},
		{"update: kube-apiserver CPU", 0.9},
		{"delete: time until all children gone", 1.25},
		{"delete: kube-apiserver CPU", 1.25},
		{"memory: live heap", 0.8},
		{"restart: time until all reconciled", 0.5},
	} {
		row, ok := rows[t.metric]
		if !ok || row.Values["expert"] == 0 {
			continue
		}
		ratio := row.Values["convergo"] / row.Values["expert"]
		fmt.Fprintf(&b, "- %s at most %sx the expert's: convergo %s, expert %s (%s): %s\n", t.metric, formatValue(t.most),
			formatValue(row.Values["convergo"]), formatValue(row.Values["expert"]), row.Unit, verdictRatio(ratio, t.most))
		if f := floors[t.metric]; f.value > 0 {
			fmt.Fprintf(&b, "  (floor: %s, %s %s, %sx the expert's)\n", f.what, formatValue(f.value), row.Unit, formatValue(f.value/row.Values["expert"]))
		}
		if phase, ok := strings.CutSuffix(t.metric, ": time until all Ready"); ok {
			b.WriteString(freeManagerBound(rows, phase))
			b.WriteString(machineWitness(rows, phase))
		}
	}
	return b.String()
}

// freeManagerBound renders, for a phase whose time target is against the expert, what the rest of the
// machine spent in the expert's phase: its machine CPU less the bench process's (the expert's manager
// and the driver), as a ratio of the whole. That is less than what a manager that cost nothing and sent
// the expert's requests would leave, since the driver's part stays. While the phase keeps the
// machine's cores busy, time follows the machine's CPU, so the ratio is about the least time such an
// operator could take. "" when the machine's CPU or the process's was not read.
func freeManagerBound(rows map[string]Row, phase string) string {
	total := rows[phase+": "+machineComponent+" CPU"].Values["expert"]
	own := rows[phase+": "+processComponent+" CPU"].Values["expert"]
	if total == 0 || own == 0 {
		return ""
	}
	busy := rows[phase+": CPU in use"]
	return fmt.Sprintf("  (bound: less the bench process's CPU (the expert's manager and the driver), the expert's %s spent %s ms per CR of the machine's %s, %sx;"+
		" with %s cores in use for the expert and %s for convergo, time follows CPU, so even a manager that cost nothing and sent the expert's requests would take about %sx the expert's time)\n",
		phase, formatValue(total-own), formatValue(total), formatValue((total-own)/total),
		formatValue(busy.Values["expert"]), formatValue(busy.Values["convergo"]), formatValue((total-own)/total))
}

// witnessComponent is the process whose CPU per CR witnesses the machine's speed: kwok plays the nodes
// and their pods, the same work whichever operator made the Deployments.
const witnessComponent = "kwok"

// machineWitness renders, for a phase whose time target is against the expert, kwok's CPU per CR in
// convergo's rounds as a ratio of the expert's. kwok's work does not depend on the operator (apart from
// its node heartbeats, a small part that follows the phase's length), so a ratio away from 1 says the
// machine ran at another speed in one implementation's rounds than in the other's, and the phase's
// ratios then measure the machine as much as the operators. "" when kwok's CPU was not read.
func machineWitness(rows map[string]Row, phase string) string {
	row := rows[phase+": "+witnessComponent+" CPU"]
	convergo, expert := row.Values["convergo"], row.Values["expert"]
	if convergo == 0 || expert == 0 {
		return ""
	}
	return fmt.Sprintf("  (machine: kwok, whose work is the same for every operator, used %s ms of CPU per CR in convergo's %s and %s in the expert's, %sx;"+
		" far from 1, the machine ran at another speed for one than for the other)\n",
		formatValue(convergo), phase, formatValue(expert), formatValue(convergo/expert))
}

// floorNote is a floor, in the unit of its target's row, and what was measured to find it.
type floorNote struct {
	value float64
	what  string
}

// perCRMillis returns cpu[comp] (seconds) in milliseconds per CR of n; 0 when it was not read.
func perCRMillis(cpu map[string]float64, comp string, n int) float64 {
	if n == 0 {
		return 0
	}
	return cpu[comp] * 1000 / float64(n)
}

// floorCPU renders what kube-apiserver and the machine spent during a floor measurement, per CR; ""
// when neither was read.
func floorCPU(cpu map[string]float64, n int) string {
	api, machine := perCRMillis(cpu, "kube-apiserver", n), perCRMillis(cpu, machineComponent, n)
	if api == 0 && machine == 0 {
		return ""
	}
	return fmt.Sprintf("Meanwhile kube-apiserver used %s ms of CPU per CR, the machine %s.\n\n", formatValue(api), formatValue(machine))
}

// verdictRatio renders an achieved ratio against its bound.
func verdictRatio(ratio, most float64) string {
	return fmt.Sprintf("%sx, %s", formatValue(ratio), verdict(ratio <= most))
}

// requestClasses splits a phase's requests by purpose.
type requestClasses struct {
	children, finalizer, status, events, reads, other int
}

// classify sorts a phase's requests: writes to ConfigMaps, Deployments and Services (children), to
// Welcomes (finalizer), to Welcome status, to events, other writes, and everything that is not a write.
func classify(p Phase) requestClasses {
	var c requestClasses
	for k, v := range p.Writes {
		_, resource, _ := strings.Cut(k, " ")
		switch resource {
		case "configmaps", "deployments", "services":
			c.children += v
		case "welcomes":
			c.finalizer += v
		case "welcomes/status":
			c.status += v
		case "events":
			c.events += v
		default:
			c.other += v
		}
	}
	c.reads = p.Requests - p.WriteCount()
	return c
}

// minimalVerdict judges the converge requests: minimal is true when everything but the events is the
// job's minimum; events are above it.
func minimalVerdict(minimal bool, events int) string {
	switch {
	case !minimal:
		return verdict(false)
	case events > 0:
		return "met without events, NOT met with them"
	default:
		return verdict(true)
	}
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// formatValue renders a figure with two decimals (an integer without them).
func formatValue(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.2f", v)
}

// formatRatio renders a ratio with two decimals, "n/a" when there is none.
func formatRatio(q *float64) string {
	if q == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", *q)
}

// ResultName returns the base name of the files a report is stored under: <date>-n<N>, e.g.
// 2026-07-01-n50.
func ResultName(r *Report) string {
	return fmt.Sprintf("%s-n%d", r.Started.UTC().Format(time.DateOnly), r.N)
}

// SaveReport writes report into dir as a Markdown file named for today and name (for instance
// "sharding-n600"), and returns its path.
func SaveReport(dir, name, report string) (string, error) {
	path := filepath.Join(dir, time.Now().Format("2006-01-02")+"-"+name+".md")
	if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
		return "", fmt.Errorf("save the report: %w", err)
	}
	return path, nil
}
