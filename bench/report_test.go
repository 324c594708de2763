package bench

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/convergo-dev/convergo/testing/harness"
)

// sampleReport has two implementations over 10 Welcomes with round figures.
func sampleReport() *Report {
	return &Report{
		N:         10,
		Nodes:     3,
		Started:   time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC),
		GoVersion: "go1.26.0",
		Results: []Result{
			{
				Implementation: "convergo",
				Converge: Phase{Seconds: 2, Requests: 50, ByVerb: map[string]int{"create": 30, "patch": 20},
					Writes: map[string]int{"create configmaps": 10, "create deployments": 10, "create services": 10, "patch welcomes": 10, "patch welcomes/status": 10}, Reconciles: 30, ReconcileSeconds: 0.5,
					MeanLatencySeconds: map[string]float64{"create": 0.010, "patch": 0.020, "create configmaps": 0.008, "create deployments": 0.012,
						"create services": 0.010, "patch welcomes": 0.015, "patch welcomes/status": 0.025},
					ServerCPUSeconds: map[string]float64{"kube-apiserver": 0.8, "etcd": 0.2, "machine": 3.2}, BusyCores: 1.6},
				Restart: Phase{Seconds: 0.5, Requests: 4, ByVerb: map[string]int{"watch": 4}, Writes: map[string]int{}, Reconciles: 10},
				Update:  Phase{Seconds: 1, Requests: 20, ByVerb: map[string]int{"patch": 20}, Writes: map[string]int{"patch deployments": 10, "patch welcomes/status": 10}, Reconciles: 20},
				Delete:  Phase{Seconds: 1.5, DrainedSeconds: 2.5, Requests: 40, ByVerb: map[string]int{"delete": 30, "patch": 10}, Writes: map[string]int{"delete services": 10, "delete deployments": 10, "delete configmaps": 10, "patch welcomes": 10}, Reconciles: 40},
				Memory:  Memory{HeapInuseBytes: 10 * 20 * 1024, HeapAllocBytes: 10 * 10 * 1024},
			},
			{
				Implementation: "baseline",
				Converge: Phase{Seconds: 4, Requests: 100, ByVerb: map[string]int{"create": 30, "update": 70},
					Writes: map[string]int{"create configmaps": 10, "create deployments": 10, "create services": 10, "update welcomes/status": 70}, Reconciles: 30, ReconcileSeconds: 1,
					MeanLatencySeconds: map[string]float64{"create": 0.010, "update": 0.0125, "create configmaps": 0.009, "create deployments": 0.011,
						"create services": 0.010, "update welcomes/status": 0.0125},
					ServerCPUSeconds: map[string]float64{"kube-apiserver": 1.2, "etcd": 0.3, "machine": 7.6}, BusyCores: 1.9},
				Restart: Phase{Seconds: 0.4, Requests: 34, ByVerb: map[string]int{"watch": 4, "update": 30}, Writes: map[string]int{"update welcomes/status": 30}, Reconciles: 10},
				Update:  Phase{Seconds: 1, Requests: 90, ByVerb: map[string]int{"update": 90}, Writes: map[string]int{"update welcomes/status": 90}, Reconciles: 30},
				Delete:  Phase{Seconds: 3, DrainedSeconds: 4, Requests: 0, ByVerb: map[string]int{}, Writes: map[string]int{}, Reconciles: 40},
				Memory:  Memory{HeapInuseBytes: 10 * 40 * 1024, HeapAllocBytes: 10 * 30 * 1024},
			},
		},
	}
}

func TestRatio(t *testing.T) {
	cases := map[string]struct {
		a, b   float64
		want   float64
		wantOK bool
	}{
		"half":           {a: 1, b: 2, want: 0.5, wantOK: true},
		"zero numerator": {a: 0, b: 3, want: 0, wantOK: true},
		"zero divisor":   {a: 3, b: 0, want: 0, wantOK: false},
		"both zero":      {a: 0, b: 0, want: 0, wantOK: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := Ratio(tc.a, tc.b)
			if diff := cmp.Diff([]any{tc.want, tc.wantOK}, []any{got, ok}); diff != "" {
				t.Errorf("Ratio(%v, %v) (-want +got):\n%s", tc.a, tc.b, diff)
			}
		})
	}
}

func TestMarkdown(t *testing.T) {
	want := `# Convergo bench: 10 Welcomes, 3 nodes

Run 2026-07-01T12:00:00Z with go1.26.0. Command: ` + "`go run ./bench/cmd/bench -n 10`" + `. Requests are the manager's own, counted client side; "per CR" divides by N.

| metric | convergo | baseline | convergo/baseline |
| --- | ---: | ---: | ---: |
| converge: time until all Ready (s) | 2 | 4 | 0.50 |
| converge: requests (per CR) | 5 | 10 | 0.50 |
| converge: create (per CR) | 3 | 3 | 1.00 |
| converge: update (per CR) | 0 | 7 | 0.00 |
| converge: patch (per CR) | 2 | 0 | n/a |
| converge: writes (per CR) | 5 | 10 | 0.50 |
| converge: create configmaps (per CR) | 1 | 1 | 1.00 |
| converge: create deployments (per CR) | 1 | 1 | 1.00 |
| converge: create services (per CR) | 1 | 1 | 1.00 |
| converge: patch welcomes (per CR) | 1 | 0 | n/a |
| converge: patch welcomes/status (per CR) | 1 | 0 | n/a |
| converge: update welcomes/status (per CR) | 0 | 7 | 0.00 |
| converge: reconciles (per CR) | 3 | 3 | 1.00 |
| converge: time in reconciles (ms per CR) | 50 | 100 | 0.50 |
| converge: kube-apiserver CPU (ms per CR) | 80 | 120 | 0.67 |
| converge: etcd CPU (ms per CR) | 20 | 30 | 0.67 |
| converge: machine CPU (ms per CR) | 320 | 760 | 0.42 |
| converge: CPU in use (cores) | 1.60 | 1.90 | 0.84 |
| converge: mean create latency (ms) | 10 | 10 | 1.00 |
| converge: mean update latency (ms) | 0 | 12.50 | 0.00 |
| converge: mean patch latency (ms) | 20 | 0 | n/a |
| converge: mean create configmaps latency (ms) | 8 | 9 | 0.89 |
| converge: mean create deployments latency (ms) | 12 | 11 | 1.09 |
| converge: mean create services latency (ms) | 10 | 10 | 1.00 |
| converge: mean patch welcomes latency (ms) | 15 | 0 | n/a |
| converge: mean patch welcomes/status latency (ms) | 25 | 0 | n/a |
| converge: mean update welcomes/status latency (ms) | 0 | 12.50 | 0.00 |
| restart: time until all reconciled (s) | 0.50 | 0.40 | 1.25 |
| restart: requests (per CR) | 0.40 | 3.40 | 0.12 |
| restart: watch (per CR) | 0.40 | 0.40 | 1.00 |
| restart: update (per CR) | 0 | 3 | 0.00 |
| restart: writes (per CR) | 0 | 3 | 0.00 |
| restart: reconciles (per CR) | 1 | 1 | 1.00 |
| restart: time in reconciles (ms per CR) | 0 | 0 | n/a |
| update: time until all Ready (s) | 1 | 1 | 1.00 |
| update: requests (per CR) | 2 | 9 | 0.22 |
| update: update (per CR) | 0 | 9 | 0.00 |
| update: patch (per CR) | 2 | 0 | n/a |
| update: writes (per CR) | 2 | 9 | 0.22 |
| update: reconciles (per CR) | 2 | 3 | 0.67 |
| update: time in reconciles (ms per CR) | 0 | 0 | n/a |
| delete: time until all children gone (s) | 1.50 | 3 | 0.50 |
| delete: time until the garbage collector is done (s) | 2.50 | 4 | 0.62 |
| delete: requests (per CR) | 4 | 0 | n/a |
| delete: patch (per CR) | 1 | 0 | n/a |
| delete: delete (per CR) | 3 | 0 | n/a |
| delete: writes (per CR) | 4 | 0 | n/a |
| delete: reconciles (per CR) | 4 | 4 | 1.00 |
| delete: time in reconciles (ms per CR) | 0 | 0 | n/a |
| memory: heap in use (KiB per CR) | 20 | 40 | 0.50 |
| memory: live heap (KiB per CR) | 10 | 30 | 0.33 |
| memory: an object that is not ours (bytes per object) | 0 | 0 | n/a |

## Targets

- restart writes per CR = 0: convergo 0 (baseline 3): met
- converge time no worse than the baseline: convergo 2s, baseline 4s: met
- converge requests per CR no more than the job's minimum (3 child creates, 1 finalizer add unless the API server adds it, the status writes that change something): convergo 5 = 3 child writes + 1 finalizer writes + 1 status writes + 0 events + 0 reads + 0 other (baseline 10): met
  (a status write sends only what changed, so every one changes something; the restart phase shows none is sent when nothing changes)
`
	r := sampleReport()
	r.Command = "go run ./bench/cmd/bench -n 10"
	if diff := cmp.Diff(want, r.Markdown()); diff != "" {
		t.Errorf("Markdown (-want +got):\n%s", diff)
	}
}

func TestMarkdownOneImplementation(t *testing.T) {
	r := sampleReport()
	r.Results = r.Results[1:]
	r.Rounds = 3
	md := r.Markdown()
	lines := strings.Split(md, "\n")
	got := map[string]bool{
		"header without ratio": contains(lines, "| metric | baseline |"),
		"no targets":           !strings.Contains(md, "## Targets"),
		"row with one value":   contains(lines, "| converge: writes (per CR) | 10 |"),
		"rounds named":         strings.Contains(md, "Each figure is the median of 3 rounds"),
	}
	want := map[string]bool{"header without ratio": true, "no targets": true, "row with one value": true, "rounds named": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("markdown of one implementation (-want +got):\n%s\n%s", diff, md)
	}
}

func contains(lines []string, line string) bool {
	for _, l := range lines {
		if l == line {
			return true
		}
	}
	return false
}

func TestTargetsNotMet(t *testing.T) {
	r := sampleReport()
	r.Results[0].Restart.Writes = map[string]int{"patch welcomes/status": 5}
	r.Results[0].Converge.Seconds = 5
	r.Results[0].Converge.Writes["create events"] = 30
	r.Results[0].Converge.Requests += 30 + 2
	md := r.Markdown()
	for _, want := range []string{
		"- restart writes per CR = 0: convergo 0.50 (baseline 3): NOT met",
		"- converge time no worse than the baseline: convergo 5s, baseline 4s: NOT met",
		"convergo 8.20 = 3 child writes + 1 finalizer writes + 1 status writes + 3 events + 0.20 reads + 0 other (baseline 10): NOT met",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// TestFinalizerAddedByTheServer: converging without a finalizer patch (an admission policy adds it)
// is within the job's minimum; two finalizer patches per CR are not.
func TestFinalizerAddedByTheServer(t *testing.T) {
	cases := map[string]struct {
		finalizerPatches int
		want             string
	}{
		"added by the server": {0, "convergo 4 = 3 child writes + 0 finalizer writes + 1 status writes + 0 events + 0 reads + 0 other (baseline 10): met"},
		"added twice":         {20, "convergo 6 = 3 child writes + 2 finalizer writes + 1 status writes + 0 events + 0 reads + 0 other (baseline 10): NOT met"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := sampleReport()
			c := &r.Results[0].Converge
			c.Requests += tc.finalizerPatches - c.Writes["patch welcomes"]
			c.Writes["patch welcomes"] = tc.finalizerPatches
			if md := r.Markdown(); !strings.Contains(md, tc.want) {
				t.Errorf("markdown lacks %q:\n%s", tc.want, md)
			}
		})
	}
}

// TestJSON checks the JSON shape: the run's parameters, the raw results and the same rows as the
// markdown table.
func TestJSON(t *testing.T) {
	r := sampleReport()
	data, err := r.JSON()
	if err != nil {
		t.Fatalf("JSON: %v", err)
	}
	var got struct {
		N               int       `json:"n"`
		Nodes           int       `json:"nodes"`
		Started         time.Time `json:"started"`
		Implementations []string  `json:"implementations"`
		Results         []struct {
			Implementation string `json:"implementation"`
			Converge       struct {
				Seconds  float64        `json:"seconds"`
				Requests int            `json:"requests"`
				ByVerb   map[string]int `json:"byVerb"`
			} `json:"converge"`
			Memory struct {
				HeapInuseBytes int64 `json:"heapInuseBytes"`
			} `json:"memory"`
		} `json:"results"`
		Rows []struct {
			Metric string             `json:"metric"`
			Unit   string             `json:"unit"`
			Values map[string]float64 `json:"values"`
			Ratio  *float64           `json:"ratio"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	header := []any{got.N, got.Nodes, got.Started, got.Implementations, len(got.Results), len(got.Rows)}
	wantHeader := []any{10, 3, r.Started, []string{"convergo", "baseline"}, 2, len(r.Rows())}
	if diff := cmp.Diff(wantHeader, header); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	conv := got.Results[0]
	if diff := cmp.Diff([]any{"convergo", 2.0, 50, map[string]int{"create": 30, "patch": 20}, int64(204800)},
		[]any{conv.Implementation, conv.Converge.Seconds, conv.Converge.Requests, conv.Converge.ByVerb, conv.Memory.HeapInuseBytes}); diff != "" {
		t.Errorf("convergo result (-want +got):\n%s", diff)
	}
	rows := map[string]any{}
	for _, row := range got.Rows {
		rows[row.Metric] = []any{row.Unit, row.Values, row.Ratio}
	}
	wantRows := map[string]any{
		"converge: requests": []any{"per CR", map[string]float64{"convergo": 5, "baseline": 10}, floatPtr(0.5)},
		"delete: requests":   []any{"per CR", map[string]float64{"convergo": 4, "baseline": 0}, (*float64)(nil)},
	}
	for metric, want := range wantRows {
		if diff := cmp.Diff(want, rows[metric]); diff != "" {
			t.Errorf("row %q (-want +got):\n%s", metric, diff)
		}
	}
}

func floatPtr(f float64) *float64 { return &f }

func TestNewPhase(t *testing.T) {
	reqs := harness.Requests{
		{Verb: "create", Resource: "configmaps", Namespace: "ns"},
		{Verb: "patch", Resource: "welcomes", Subresource: "status", Namespace: "ns"},
		{Verb: "patch", Resource: "welcomes", Subresource: "status", Namespace: "ns"},
		{Verb: "watch", Resource: "deployments", Namespace: "ns"},
		{Verb: "get", Path: "/api"},
	}
	got := NewPhase(reqs, 2*time.Second, 3*time.Second, 7)
	want := Phase{
		Seconds: 2, SettledSeconds: 3, Requests: 5,
		ByVerb:     map[string]int{"create": 1, "patch": 2, "watch": 1, "get": 1},
		Writes:     map[string]int{"create configmaps": 1, "patch welcomes/status": 2},
		Reconciles: 7,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NewPhase (-want +got):\n%s", diff)
	}
	if got.WriteCount() != 3 {
		t.Errorf("WriteCount = %d, want 3", got.WriteCount())
	}
}

func TestClassify(t *testing.T) {
	p := Phase{
		Requests: 12,
		Writes: map[string]int{
			"patch configmaps": 1, "create deployments": 1, "update services": 1,
			"patch welcomes": 1, "patch welcomes/status": 2, "update welcomes/status": 1,
			"create events": 2, "patch events": 1, "create secrets": 1,
		},
	}
	got := classify(p)
	want := requestClasses{children: 3, finalizer: 1, status: 3, events: 3, other: 1, reads: 1}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(requestClasses{})); diff != "" {
		t.Errorf("classify (-want +got):\n%s", diff)
	}
}

func TestResultName(t *testing.T) {
	r := &Report{N: 2000, Started: time.Date(2026, 7, 1, 23, 30, 0, 0, time.FixedZone("x", -2*3600))}
	if got, want := ResultName(r), "2026-07-02-n2000"; got != want {
		t.Errorf("ResultName = %q, want %q", got, want)
	}
}

func TestRowsHaveNoNaN(t *testing.T) {
	r := &Report{N: 0, Results: []Result{{Implementation: "convergo"}, {Implementation: "baseline"}}}
	for _, row := range r.Rows() {
		for impl, v := range row.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("row %q: %s = %v", row.Metric, impl, v)
			}
		}
		if row.Ratio != nil {
			t.Errorf("row %q: ratio %v of zero figures, want none", row.Metric, *row.Ratio)
		}
	}
}

func TestMinimalVerdict(t *testing.T) {
	cases := map[string]struct {
		minimal bool
		events  int
		want    string
	}{
		"minimal":             {minimal: true, want: "met"},
		"minimal plus events": {minimal: true, events: 50, want: "met without events, NOT met with them"},
		"more than minimal":   {events: 50, want: "NOT met"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, minimalVerdict(tc.minimal, tc.events)); diff != "" {
				t.Errorf("minimalVerdict(%v, %d) (-want +got):\n%s", tc.minimal, tc.events, diff)
			}
		})
	}
}

// expertResult is the expert's measurement over the 10 Welcomes of sampleReport.
func expertResult() Result {
	return Result{
		Implementation: "expert",
		Description:    "hand-written",
		Converge: Phase{Seconds: 2.5, Requests: 40, ByVerb: map[string]int{"create": 30, "patch": 10},
			Writes: map[string]int{"create configmaps": 10, "create deployments": 10, "create services": 10, "patch welcomes/status": 10}, Reconciles: 30, ReconcileSeconds: 0.4},
		Restart: Phase{Seconds: 0.5, Requests: 4, ByVerb: map[string]int{"watch": 4}, Writes: map[string]int{}, Reconciles: 10},
		Update:  Phase{Seconds: 1, Requests: 20, ByVerb: map[string]int{"patch": 20}, Writes: map[string]int{"patch deployments": 10, "patch welcomes/status": 10}, Reconciles: 20},
		Delete:  Phase{Seconds: 3, Requests: 0, ByVerb: map[string]int{}, Writes: map[string]int{}, Reconciles: 40},
		Memory:  Memory{HeapInuseBytes: 10 * 16 * 1024, HeapAllocBytes: 10 * 8 * 1024},
	}
}

// reportOf returns sampleReport with the results of the named implementations, in that order
// ("convergo", "baseline", "expert", or any other name for a copy of the baseline under that name).
func reportOf(names ...string) *Report {
	r := sampleReport()
	byName := map[string]Result{"convergo": r.Results[0], "baseline": r.Results[1], "expert": expertResult()}
	r.Results = nil
	for _, name := range names {
		res, ok := byName[name]
		if !ok {
			res = byName["baseline"]
			res.Implementation = name
		}
		r.Results = append(r.Results, res)
	}
	return r
}

func TestRatioColumns(t *testing.T) {
	cases := map[string]struct {
		impls []string
		want  []string
	}{
		"expert in the middle":     {impls: []string{"convergo", "expert", "baseline"}, want: []string{"convergo/expert", "baseline/expert"}},
		"expert first":             {impls: []string{"expert", "convergo", "baseline"}, want: []string{"convergo/expert", "baseline/expert"}},
		"expert last of four":      {impls: []string{"convergo", "baseline", "baseline-4", "expert"}, want: []string{"convergo/expert", "baseline/expert", "baseline-4/expert"}},
		"expert first of two":      {impls: []string{"expert", "baseline"}, want: []string{"baseline/expert"}},
		"expert alone":             {impls: []string{"expert"}, want: nil},
		"two without the expert":   {impls: []string{"convergo", "baseline"}, want: []string{"convergo/baseline"}},
		"three without the expert": {impls: []string{"convergo", "baseline", "baseline-4"}, want: nil},
		"one without the expert":   {impls: []string{"baseline"}, want: nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, col := range reportOf(tc.impls...).RatioColumns() {
				got = append(got, col.Label())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("RatioColumns of %v (-want +got):\n%s", tc.impls, diff)
			}
		})
	}
}

// TestRowsAgainstTheExpert checks the rows' ratios with the expert measured: every other
// implementation against it, none where the expert's figure is zero; Ratio is the first column's.
func TestRowsAgainstTheExpert(t *testing.T) {
	// ratios are a row's ratios; the zero value is that of a row where the reference's figure is zero.
	type ratios struct {
		Ratios map[string]float64
		Ratio  *float64
	}
	cases := map[string]struct {
		impls []string
		want  map[string]ratios // by metric
	}{
		"convergo, expert, baseline": {
			impls: []string{"convergo", "expert", "baseline"},
			want: map[string]ratios{
				"converge: requests":   {Ratios: map[string]float64{"convergo/expert": 1.25, "baseline/expert": 2.5}, Ratio: floatPtr(1.25)},
				"converge: patch":      {Ratios: map[string]float64{"convergo/expert": 2, "baseline/expert": 0}, Ratio: floatPtr(2)},
				"converge: update":     {},
				"delete: requests":     {},
				"restart: writes":      {},
				"memory: heap in use":  {Ratios: map[string]float64{"convergo/expert": 1.25, "baseline/expert": 2.5}, Ratio: floatPtr(1.25)},
				"update: writes":       {Ratios: map[string]float64{"convergo/expert": 1, "baseline/expert": 4.5}, Ratio: floatPtr(1)},
				"converge: reconciles": {Ratios: map[string]float64{"convergo/expert": 1, "baseline/expert": 1}, Ratio: floatPtr(1)},
				"delete: reconciles":   {Ratios: map[string]float64{"convergo/expert": 1, "baseline/expert": 1}, Ratio: floatPtr(1)},
			},
		},
		"baseline, expert": {
			impls: []string{"baseline", "expert"},
			want: map[string]ratios{
				"converge: requests": {Ratios: map[string]float64{"baseline/expert": 2.5}, Ratio: floatPtr(2.5)},
				"delete: requests":   {},
			},
		},
		"convergo, baseline (no expert: the first against the second)": {
			impls: []string{"convergo", "baseline"},
			want: map[string]ratios{
				"converge: requests": {Ratios: map[string]float64{"convergo/baseline": 0.5}, Ratio: floatPtr(0.5)},
				"delete: requests":   {},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rows := map[string]ratios{}
			for _, row := range reportOf(tc.impls...).Rows() {
				rows[row.Metric] = ratios{Ratios: row.Ratios, Ratio: row.Ratio}
			}
			got := map[string]ratios{}
			for metric := range tc.want {
				row, ok := rows[metric]
				if !ok {
					t.Errorf("no row %q", metric)
				}
				got[metric] = row
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ratios (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMarkdownAgainstTheExpert checks the table's header and rows with the expert measured.
func TestMarkdownAgainstTheExpert(t *testing.T) {
	cases := map[string]struct {
		impls []string
		want  []string // lines the markdown must hold
	}{
		"default order": {
			impls: []string{"convergo", "expert", "baseline"},
			want: []string{
				"- expert: hand-written",
				"| metric | convergo | expert | baseline | convergo/expert | baseline/expert |",
				"| --- | ---: | ---: | ---: | ---: | ---: |",
				"| converge: time until all Ready (s) | 2 | 2.50 | 4 | 0.80 | 1.60 |",
				"| converge: requests (per CR) | 5 | 4 | 10 | 1.25 | 2.50 |",
				"| converge: update (per CR) | 0 | 0 | 7 | n/a | n/a |",
				"| delete: requests (per CR) | 4 | 0 | 0 | n/a | n/a |",
				"| memory: heap in use (KiB per CR) | 20 | 16 | 40 | 1.25 | 2.50 |",
				"## Targets",
			},
		},
		"expert first, then the baseline": {
			impls: []string{"expert", "baseline"},
			want: []string{
				"| metric | expert | baseline | baseline/expert |",
				"| --- | ---: | ---: | ---: |",
				"| converge: requests (per CR) | 4 | 10 | 2.50 |",
			},
		},
		"no expert": {
			impls: []string{"convergo", "baseline"},
			want: []string{
				"| metric | convergo | baseline | convergo/baseline |",
				"| converge: requests (per CR) | 5 | 10 | 0.50 |",
			},
		},
		"three without the expert: no ratio": {
			impls: []string{"convergo", "baseline", "baseline-4"},
			want: []string{
				"| metric | convergo | baseline | baseline-4 |",
				"| converge: requests (per CR) | 5 | 10 | 10 |",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			md := reportOf(tc.impls...).Markdown()
			lines := strings.Split(md, "\n")
			var missing []string
			for _, want := range tc.want {
				if !contains(lines, want) {
					missing = append(missing, want)
				}
			}
			if diff := cmp.Diff([]string(nil), missing); diff != "" {
				t.Errorf("lines missing from the markdown (-want +got):\n%s\n%s", diff, md)
			}
		})
	}
}

// TestJSONAgainstTheExpert checks that the JSON holds every implementation's raw figures, the ratio
// columns and each row's ratios.
func TestJSONAgainstTheExpert(t *testing.T) {
	data, err := reportOf("convergo", "expert", "baseline").JSON()
	if err != nil {
		t.Fatalf("JSON: %v", err)
	}
	var got struct {
		Implementations []string `json:"implementations"`
		RatioColumns    []string `json:"ratioColumns"`
		Results         []struct {
			Implementation string `json:"implementation"`
			Converge       struct {
				Requests int            `json:"requests"`
				Writes   map[string]int `json:"writes"`
			} `json:"converge"`
		} `json:"results"`
		Rows []struct {
			Metric string             `json:"metric"`
			Ratio  *float64           `json:"ratio"`
			Ratios map[string]float64 `json:"ratios"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	results := map[string]int{}
	for _, res := range got.Results {
		results[res.Implementation] = res.Converge.Requests
	}
	rows := map[string]any{}
	for _, row := range got.Rows {
		if row.Metric == "converge: requests" || row.Metric == "delete: requests" {
			rows[row.Metric] = []any{row.Ratio, row.Ratios}
		}
	}
	want := []any{
		[]string{"convergo", "expert", "baseline"},
		[]string{"convergo/expert", "baseline/expert"},
		map[string]int{"convergo": 50, "expert": 40, "baseline": 100},
		map[string]any{
			"converge: requests": []any{floatPtr(1.25), map[string]float64{"convergo/expert": 1.25, "baseline/expert": 2.5}},
			"delete: requests":   []any{(*float64)(nil), map[string]float64(nil)},
		},
	}
	if diff := cmp.Diff(want, []any{got.Implementations, got.RatioColumns, results, rows}); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
}

// TestExpertTargets: with the expert measured, the report states issue #18's bounds with the achieved
// ratios; without it, none.
func TestExpertTargets(t *testing.T) {
	r := sampleReport()
	r.Results[1].Implementation = "expert" // the sample's baseline stands in for the expert
	md := r.Markdown()
	for _, want := range []string{
		"- converge: time until all Ready at most 0.90x the expert's: convergo 2, expert 4 (s): 0.50x, met",
		"- delete: time until all children gone at most 1.25x the expert's: convergo 1.50, expert 3 (s): 0.50x, met",
		"- restart: time until all reconciled at most 0.50x the expert's: convergo 0.50, expert 0.40 (s): 1.25x, NOT met",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md[strings.Index(md, "## Targets"):])
		}
	}
	if strings.Contains(md, "(floor:") {
		t.Errorf("floors without a floor measured:\n%s", md[strings.Index(md, "## Targets"):])
	}
	r.Floor = &ByHand{Deployments: 10, AvailableSeconds: 3, ScaledSeconds: 0.5, AvailableCPU: map[string]float64{"kube-apiserver": 0.5}}
	md = r.Markdown()
	for _, want := range []string{
		"- converge: kube-apiserver CPU at most 0.90x the expert's: convergo 80, expert 120 (ms per CR): 0.67x, met\n" +
			"  (floor: kube-apiserver while the Deployments created by hand became available, 50 ms per CR, 0.42x the expert's)\n",
		"- converge: time until all Ready at most 0.90x the expert's: convergo 2, expert 4 (s): 0.50x, met\n" +
			"  (floor: the same number of Deployments created by hand, all available, 3 s, 0.75x the expert's)\n" +
			"- converge: kube-apiserver CPU",
		"- update: time until all Ready at most 0.90x the expert's: convergo 1, expert 1 (s): 1x, NOT met\n" +
			"  (floor: those Deployments scaled by hand, all scaled, 0.50 s, 0.50x the expert's)\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md[strings.Index(md, "## Targets"):])
		}
	}
	r.Results[0].Update.ServerCPUSeconds = map[string]float64{"machine": 6, "manager process": 1}
	r.Results[1].Update.ServerCPUSeconds = map[string]float64{"machine": 5, "manager process": 0.5}
	r.Results[0].Update.BusyCores, r.Results[1].Update.BusyCores = 2, 1.9
	md = r.Markdown()
	for _, want := range []string{
		"  (floor: those Deployments scaled by hand, all scaled, 0.50 s, 0.50x the expert's)\n" +
			"  (bound: less the bench process's CPU (the expert's manager and the driver), the expert's update spent 450 ms per CR of the machine's 500, 0.90x;" +
			" with 1.90 cores in use for the expert and 2 for convergo, time follows CPU, so even a manager that cost nothing and sent the expert's requests would take about 0.90x the expert's time)\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md[strings.Index(md, "## Targets"):])
		}
	}
	if strings.Contains(md, "(machine:") {
		t.Errorf("a machine check without kwok's CPU read:\n%s", md[strings.Index(md, "## Targets"):])
	}
	r.Results[0].Update.ServerCPUSeconds["kwok"] = 0.05
	r.Results[1].Update.ServerCPUSeconds["kwok"] = 0.04
	md = r.Markdown()
	if want := "  (machine: kwok, whose work is the same for every operator, used 5 ms of CPU per CR in convergo's update and 4 in the expert's, 1.25x;" +
		" far from 1, the machine ran at another speed for one than for the other)\n"; !strings.Contains(md, want) {
		t.Errorf("markdown lacks %q:\n%s", want, md[strings.Index(md, "## Targets"):])
	}
	if strings.Contains(md, "convergo's converge and") {
		t.Errorf("a machine check for converge, whose kwok CPU was not read:\n%s", md[strings.Index(md, "## Targets"):])
	}
	if strings.Contains(md, "the expert's converge spent") {
		t.Errorf("a bound for converge, whose manager CPU was not read:\n%s", md[strings.Index(md, "## Targets"):])
	}
	if md := sampleReport().Markdown(); strings.Contains(md, "the expert's") {
		t.Errorf("targets against the expert without an expert run:\n%s", md)
	}
}

func TestMarkdownWithoutRollout(t *testing.T) {
	cases := map[string]struct {
		withoutRollout bool
		want, notWant  []string
	}{
		"with rollout": {
			want:    []string{"| converge: time until all Ready (s) |", "| update: time until all Ready (s) |", "## Targets"},
			notWant: []string{"Without rollout", "status written"},
		},
		"without rollout": {
			withoutRollout: true,
			want: []string{
				"Without rollout: kube-controller-manager ran without deployment-controller, replicaset-controller,",
				"| converge: time until all status written (s) |", "| update: time until all status written (s) |",
				"| restart: time until all reconciled (s) |",
			},
			notWant: []string{"## Targets", "time until all Ready"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := reportOf("convergo", "expert", "baseline")
			r.WithoutRollout = tc.withoutRollout
			checkMarkdown(t, r.Markdown(), tc.want, tc.notWant)
		})
	}
}

func TestRowsAboveIdle(t *testing.T) {
	r := reportOf("convergo", "expert")
	r.Results[0].IdleCPUPerSecond = map[string]float64{"kube-apiserver": 0.05}
	r.Results[1].IdleCPUPerSecond = map[string]float64{"kube-apiserver": 0.04}
	r.Results[0].Converge.ServerCPUAboveIdleSeconds = map[string]float64{"kube-apiserver": 0.3}
	r.Results[1].Converge.ServerCPUAboveIdleSeconds = map[string]float64{"kube-apiserver": 0.6}
	got := map[string]Row{}
	for _, row := range r.Rows() {
		got[row.Metric] = row
	}
	for metric, want := range map[string]map[string]float64{
		"converge: kube-apiserver CPU above idle": {"convergo": 30, "expert": 60}, // ms per CR, N=10
		"idle: kube-apiserver CPU":                {"convergo": 50, "expert": 40}, // ms per s
	} {
		row, ok := got[metric]
		if !ok {
			t.Errorf("no row %q", metric)
			continue
		}
		if diff := cmp.Diff(want, row.Values); diff != "" {
			t.Errorf("%s (-want +got):\n%s", metric, diff)
		}
	}
	if _, ok := got["update: kube-apiserver CPU above idle"]; ok {
		t.Errorf("a row above idle for update, which has no such figure")
	}
}

func TestMarkdownByHand(t *testing.T) {
	cases := map[string]struct {
		warmUp        ByHand
		floor         *ByHand
		want, notWant []string
	}{
		"warm-up only": {
			warmUp:  ByHand{Deployments: 10, AvailableSeconds: 3.5},
			want:    []string{"Warm-up, on the fresh cluster: 10 Deployments of one pod, each with a ConfigMap, created by the driver 16 at a time with no operator, were all available after 3.50 s."},
			notWant: []string{"Floor"},
		},
		"warm-up and floor": {
			warmUp:  ByHand{Deployments: 10, AvailableSeconds: 3.5},
			floor:   &ByHand{Deployments: 10, AvailableSeconds: 2.25},
			notWant: []string{"Scaled"},
			want: []string{"Warm-up, on the fresh cluster: 10", "Floor, on the warmed cluster before the first measurement: 10 Deployments created the same way " +
				"were all available after 2.25 s: the cluster's own part of a converge phase of 10 Welcomes"},
		},
		"floor scaled": {
			warmUp: ByHand{Deployments: 10, AvailableSeconds: 3.5},
			floor:  &ByHand{Deployments: 10, AvailableSeconds: 2.25, ScaledSeconds: 1.5},
			want: []string{"were all available after 2.25 s", "Scaled by hand in the same way to the update phase's replicas, they all had them " +
				"available after 1.50 s: the cluster's own part of an update phase."},
		},
		"floor with CPU": {
			warmUp: ByHand{Deployments: 10, AvailableSeconds: 3.5},
			floor: &ByHand{Deployments: 10, AvailableSeconds: 2.25, ScaledSeconds: 1.5,
				AvailableCPU: map[string]float64{"kube-apiserver": 0.5, machineComponent: 1.25},
				ScaledCPU:    map[string]float64{"kube-apiserver": 0.25}},
			want: []string{"the cluster's own part of a converge phase of 10 Welcomes, which no operator can shorten.\n\n" +
				"Meanwhile kube-apiserver used 50 ms of CPU per CR, the machine 125.\n\n",
				"the cluster's own part of an update phase.\n\nMeanwhile kube-apiserver used 25 ms of CPU per CR, the machine 0.\n\n"},
		},
		"without rollout": {warmUp: ByHand{Deployments: 10}, floor: &ByHand{Deployments: 10}, notWant: []string{"Warm-up", "Floor", "Scaled", "Meanwhile"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := sampleReport()
			r.WarmUp, r.Floor = tc.warmUp, tc.floor
			checkMarkdown(t, r.Markdown(), tc.want, tc.notWant)
		})
	}
}

// checkMarkdown fails t for each string of want that md lacks and each of notWant that it has.
func checkMarkdown(t *testing.T, md string, want, notWant []string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q:\n%s", s, md)
		}
	}
	for _, s := range notWant {
		if strings.Contains(md, s) {
			t.Errorf("markdown has %q:\n%s", s, md)
		}
	}
}

func TestRestartFloor(t *testing.T) {
	floor := &Phase{Seconds: 0.3, BusyCores: 1.5, ServerCPUSeconds: map[string]float64{"kube-apiserver": 0.1, "manager process": 0.2, "machine": 0.45}}
	cases := map[string]struct {
		floors        []*Phase // convergo's, then the expert's
		rows          map[string]map[string]float64
		want, notWant []string
	}{
		"measured": {
			floors: []*Phase{floor, {Seconds: 0.2}},
			rows: map[string]map[string]float64{
				restartFloorMetric:                   {"convergo": 0.3, "expert": 0.2},
				"restart floor: kube-apiserver CPU":  {"convergo": 10, "expert": 0}, // ms per CR, N=10
				"restart floor: manager process CPU": {"convergo": 20, "expert": 0},
				"restart floor: machine CPU":         {"convergo": 45, "expert": 0},
				"restart floor: CPU in use":          {"convergo": 1.5, "expert": 0},
			},
			want: []string{"| restart floor: time until all reconciled by a receiver (s) | 0.30 | 0.20 | 1.50 |",
				"- restart: time until all reconciled at most 0.50x the expert's: convergo 0.50, expert 0.40 (s): 1.25x, NOT met\n" +
					"  (floor: a receiver that only lists and watches the same objects whole, and reads each Welcome once, restarted on convergo's objects, 0.30 s, 0.75x the expert's)\n"},
		},
		"not measured": {floors: []*Phase{nil, nil}, notWant: []string{"restart floor"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := sampleReport()
			r.Results[1].Implementation = "expert" // the sample's baseline stands in for the expert (restart 0.4 s)
			for i, f := range tc.floors {
				r.Results[i].RestartFloor = f
			}
			got := map[string]map[string]float64{}
			for _, row := range r.Rows() {
				if strings.HasPrefix(row.Metric, "restart floor") {
					got[row.Metric] = row.Values
				}
			}
			if tc.rows == nil {
				tc.rows = map[string]map[string]float64{}
			}
			if diff := cmp.Diff(tc.rows, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("restart floor rows (-want +got):\n%s", diff)
			}
			checkMarkdown(t, r.Markdown(), tc.want, tc.notWant)
		})
	}
}

func TestRestartTimes(t *testing.T) {
	cases := map[string]struct {
		restarts      int
		want, notWant []string
	}{
		"several a round": {
			restarts: 3,
			want: []string{" Each round restarts each manager 3 times, one after the other;",
				"\nEach restart, in the order measured (s):\n\n- convergo: 0.166, 0.187, 0.170\n" +
					"- the receiver on convergo's objects: 0.120, 0.131, 0.118\n- baseline: 0.342, 0.523, 0.322\n"},
		},
		"one a round": {restarts: 1, notWant: []string{"Each restart", "restarts each manager"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := sampleReport()
			r.Restarts = tc.restarts
			r.Results[0].RestartSeconds = []float64{0.166, 0.187, 0.17}
			r.Results[0].RestartFloorSeconds = []float64{0.12, 0.131, 0.118}
			r.Results[1].RestartSeconds = []float64{0.342, 0.523, 0.322}
			checkMarkdown(t, r.Markdown(), tc.want, tc.notWant)
		})
	}
}

// TestPlaceWaitRow: the report says how much of the time in reconciles was spent waiting for a place
// when an implementation waited at all, and has no such row otherwise.
func TestPlaceWaitRow(t *testing.T) {
	cases := map[string]struct {
		wait    float64 // seconds waited in convergo's converge
		wantRow bool
	}{
		"waited":       {wait: 2.5, wantRow: true},
		"never waited": {wait: 0, wantRow: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := sampleReport()
			r.Results[0].Converge.PlaceWaitSeconds = tc.wait
			var got *Row
			for _, row := range r.Rows() {
				if row.Metric == "converge: of which waiting for a place" {
					got = &row
				}
			}
			if diff := cmp.Diff(tc.wantRow, got != nil); diff != "" {
				t.Fatalf("row present (-want +got):\n%s", diff)
			}
			if got != nil {
				if diff := cmp.Diff(map[string]float64{"convergo": tc.wait * 1000 / float64(r.N), "baseline": 0}, got.Values); diff != "" {
					t.Errorf("row values (-want +got):\n%s", diff)
				}
			}
		})
	}
}
