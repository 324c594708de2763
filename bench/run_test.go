package bench

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	// controller-runtime registers its process and Go collectors with its controller package, which
	// the managers under measurement import.
	_ "sigs.k8s.io/controller-runtime/pkg/controller"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/testing/cluster"
)

// TestIsReadyAndObserved covers the two goals of a Welcome: Ready for its generation (a full
// cluster), and its status written for its generation (without rollout).
func TestIsReadyAndObserved(t *testing.T) {
	ready := func(status metav1.ConditionStatus, observed int64) []metav1.Condition {
		return []metav1.Condition{{Type: "Ready", Status: status, ObservedGeneration: observed}}
	}
	cases := map[string]struct {
		generation    int64
		conditions    []metav1.Condition
		minGeneration int64
		wantReady     bool
		wantObserved  bool
	}{
		"ready for the generation":     {generation: 2, conditions: ready(metav1.ConditionTrue, 2), wantReady: true, wantObserved: true},
		"ready for an older one":       {generation: 2, conditions: ready(metav1.ConditionTrue, 1)},
		"not ready for the generation": {generation: 2, conditions: ready(metav1.ConditionFalse, 2), wantObserved: true},
		"written for an older one":     {generation: 2, conditions: ready(metav1.ConditionFalse, 1)},
		"no condition":                 {generation: 1},
		"cache behind the driver":      {generation: 1, conditions: ready(metav1.ConditionTrue, 1), minGeneration: 2},
		"at the driver's generation": {generation: 2, conditions: ready(metav1.ConditionTrue, 2), minGeneration: 2,
			wantReady: true, wantObserved: true},
		"other condition only": {generation: 1,
			conditions: []metav1.Condition{{Type: "Reconciling", Status: metav1.ConditionTrue, ObservedGeneration: 1}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &v1alpha1.Welcome{ObjectMeta: metav1.ObjectMeta{Generation: tc.generation}}
			w.Status.Conditions = tc.conditions
			if got := isReady(w, tc.minGeneration); got != tc.wantReady {
				t.Errorf("isReady = %v, want %v", got, tc.wantReady)
			}
			if got := isObserved(w, tc.minGeneration); got != tc.wantObserved {
				t.Errorf("isObserved = %v, want %v", got, tc.wantObserved)
			}
		})
	}
}

func TestDisabled(t *testing.T) {
	cases := map[string]struct {
		controllers []string
		want        string
	}{
		"one":     {controllers: []string{"deployment-controller"}, want: "--controllers=-deployment-controller"},
		"several": {controllers: []string{"a", "b"}, want: "--controllers=-a,-b"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, disabled(tc.controllers)); diff != "" {
				t.Errorf("disabled (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAboveIdle(t *testing.T) {
	cases := map[string]struct {
		used, idle map[string]float64
		window     time.Duration
		want       map[string]float64
	}{
		"no idle figures": {used: map[string]float64{"etcd": 2}, window: time.Second},
		"no CPU figures":  {idle: map[string]float64{"etcd": 0.5}, window: time.Second},
		"the idle rate over the window taken off, per component": {
			used:   map[string]float64{"kube-apiserver": 3, "etcd": 1},
			idle:   map[string]float64{"kube-apiserver": 0.25, "etcd": 0.125},
			window: 4 * time.Second,
			want:   map[string]float64{"kube-apiserver": 2, "etcd": 0.5},
		},
		"a component without an idle figure left out": {
			used:   map[string]float64{"kube-apiserver": 3, "manager process": 1},
			idle:   map[string]float64{"kube-apiserver": 0.5},
			window: 2 * time.Second,
			want:   map[string]float64{"kube-apiserver": 2},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, aboveIdle(tc.used, tc.idle, tc.window)); diff != "" {
				t.Errorf("aboveIdle (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBusyCores reads the cores in use around busy work of this process, and no figure without a
// first reading or a time.
func TestBusyCores(t *testing.T) {
	before, err := cluster.MachineCPUTime()
	if err != nil {
		t.Skipf("no machine cpu time here: %v", err)
	}
	start := time.Now()
	for time.Since(start) < 200*time.Millisecond {
	}
	elapsed := time.Since(start)
	cases := map[string]struct {
		before, elapsed time.Duration
		busy            bool
	}{
		"busy work":        {before: before, elapsed: elapsed, busy: true},
		"no first reading": {before: 0, elapsed: elapsed},
		"no time":          {before: before, elapsed: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := busyCores(tc.before, tc.elapsed)
			if diff := cmp.Diff(tc.busy, got > 0); diff != "" {
				t.Errorf("busyCores = %v (-want busy +got):\n%s", got, diff)
			}
		})
	}
}

func TestIsChild(t *testing.T) {
	cases := map[string]struct {
		meta metav1.ObjectMeta
		want bool
	}{
		"owned by a welcome": {want: true, meta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "web.convergo.dev/v1alpha1", Kind: "Welcome", Name: "a"},
		}}},
		"welcome label":     {want: true, meta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": "welcome"}}},
		"kube-root-ca.crt":  {want: false, meta: metav1.ObjectMeta{Name: "kube-root-ca.crt"}},
		"other application": {want: false, meta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": "memcached"}}},
		"other group's Welcome": {want: false, meta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "example.com/v1", Kind: "Welcome", Name: "a"},
		}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := &metav1.PartialObjectMetadata{ObjectMeta: tc.meta}
			if got := isChild(obj); got != tc.want {
				t.Errorf("isChild = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNodesFor(t *testing.T) {
	cases := map[string]struct{ n, want int }{
		"one":      {n: 1, want: 3},
		"default":  {n: DefaultN, want: 3},
		"hundreds": {n: 500, want: 11},
		"maximum":  {n: MaxN, want: 38},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := NodesFor(tc.n)
			if got != tc.want {
				t.Errorf("NodesFor(%d) = %d, want %d", tc.n, got, tc.want)
			}
			if room := (got - 1) * 110; room < 2*tc.n {
				t.Errorf("NodesFor(%d) = %d leaves room for %d pods without the spare node, want %d", tc.n, got, room, 2*tc.n)
			}
		})
	}
}

func TestNewConfig(t *testing.T) {
	cases := map[string]struct {
		opts      []Option
		wantNodes int
		wantErr   bool
	}{
		"defaults":          {wantNodes: 3},
		"sized nodes":       {opts: []Option{WithN(1000)}, wantNodes: NodesFor(1000)},
		"explicit nodes":    {opts: []Option{WithN(1000), WithNodes(5)}, wantNodes: 5},
		"zero objects":      {opts: []Option{WithN(0)}, wantErr: true},
		"too many objects":  {opts: []Option{WithN(MaxN + 1)}, wantErr: true},
		"negative nodes":    {opts: []Option{WithNodes(-1)}, wantErr: true},
		"no driver workers": {opts: []Option{WithWorkers(0)}, wantErr: true},
		"no rounds":         {opts: []Option{WithRounds(0)}, wantErr: true},
		"no restarts":       {opts: []Option{WithRestarts(0)}, wantErr: true},
		"one restart":       {opts: []Option{WithRestarts(1)}, wantNodes: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg, err := newConfig(tc.opts)
			if (err != nil) != tc.wantErr {
				t.Fatalf("newConfig error = %v, want error: %v", err, tc.wantErr)
			}
			if err == nil && cfg.nodes != tc.wantNodes {
				t.Errorf("nodes = %d, want %d", cfg.nodes, tc.wantNodes)
			}
		})
	}
}

func TestStatsFrom(t *testing.T) {
	reg := prometheus.NewRegistry()
	total := prometheus.NewCounterVec(prometheus.CounterOpts{Name: reconcileTotalMetric, Help: "reconciles"}, []string{"controller", "result"})
	seconds := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: reconcileTimeMetric, Help: "time"}, []string{"controller"})
	wait := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: placeWaitMetric, Help: "wait"}, []string{"controller", "lane"})
	other := prometheus.NewCounter(prometheus.CounterOpts{Name: "unrelated_total", Help: "other"})
	reg.MustRegister(total, seconds, wait, other)
	total.WithLabelValues("welcome", "success").Add(5)
	total.WithLabelValues("welcome", "error").Add(2)
	total.WithLabelValues("welcome-baseline", "requeue").Add(1)
	seconds.WithLabelValues("welcome").Observe(0.25)
	seconds.WithLabelValues("welcome").Observe(0.5)
	seconds.WithLabelValues("welcome-baseline").Observe(1)
	wait.WithLabelValues("welcome", "others").Observe(0.125)
	wait.WithLabelValues("welcome", "deleting").Observe(0.25)
	other.Add(100)

	got, err := statsFrom(reg)
	if err != nil {
		t.Fatalf("statsFrom: %v", err)
	}
	if diff := cmp.Diff(reconcileStats{count: 8, seconds: 1.75, waitSeconds: 0.375}, got, cmp.AllowUnexported(reconcileStats{})); diff != "" {
		t.Errorf("statsFrom (-want +got):\n%s", diff)
	}
}

func TestReconcilesGathersNoProcessMetrics(t *testing.T) {
	if _, err := reconciles(); err != nil {
		t.Fatalf("reconciles: %v", err)
	}
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var got []string
	for _, f := range families {
		if name := f.GetName(); strings.HasPrefix(name, "process_") || strings.HasPrefix(name, "go_") {
			got = append(got, name)
		}
	}
	if diff := cmp.Diff([]string(nil), got); diff != "" {
		t.Errorf("process and runtime metrics still gathered (-want +got):\n%s", diff)
	}
}

func TestCPUSince(t *testing.T) {
	cases := map[string]struct {
		before, after map[string]time.Duration
		want          map[string]float64
	}{
		"both read": {
			before: map[string]time.Duration{"kube-apiserver": time.Second, "etcd": 0},
			after:  map[string]time.Duration{"kube-apiserver": 3 * time.Second, "etcd": 500 * time.Millisecond},
			want:   map[string]float64{"kube-apiserver": 2, "etcd": 0.5},
		},
		"restarted in between: left out": {
			before: map[string]time.Duration{"kube-apiserver": 5 * time.Second, "etcd": time.Second},
			after:  map[string]time.Duration{"kube-apiserver": time.Second, "etcd": 2 * time.Second},
			want:   map[string]float64{"etcd": 1},
		},
		"not read after: left out": {
			before: map[string]time.Duration{"kube-apiserver": time.Second},
			after:  map[string]time.Duration{},
		},
		"no cluster": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, cpuSince(tc.before, tc.after)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestForEachName(t *testing.T) {
	boom := errors.New("boom")
	cases := map[string]struct {
		workers int
		names   []string
		failOn  string
		wantErr error
	}{
		"every name, fewer workers than names": {workers: 2, names: []string{"a", "b", "c", "d", "e"}},
		"more workers than names":              {workers: 8, names: []string{"a", "b"}},
		"no names":                             {workers: 4},
		"the first error":                      {workers: 1, names: []string{"a", "b", "c"}, failOn: "b", wantErr: boom},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var called []string
			err := forEachName(t.Context(), tc.workers, tc.names, func(n string) error {
				mu.Lock()
				called = append(called, n)
				mu.Unlock()
				if n == tc.failOn {
					return boom
				}
				return nil
			})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			want := tc.names
			if tc.failOn != "" { // one worker: the names up to the failing one, none after it
				want = tc.names[:slices.Index(tc.names, tc.failOn)+1]
			}
			slices.Sort(called)
			if diff := cmp.Diff(want, called, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("names called (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBusiest finds the component that took the largest share of a core over a window, the figure
// the wait after the foreign objects' deletion compares with quietCPU.
func TestBusiest(t *testing.T) {
	tests := []struct {
		name   string
		used   map[string]float64
		window time.Duration
		want   float64
	}{
		{name: "nothing read", used: nil, window: time.Second, want: 0},
		{name: "one component", used: map[string]float64{"etcd": 0.05}, window: time.Second, want: 0.05},
		{name: "the busiest of several", used: map[string]float64{"etcd": 0.02, "kube-controller-manager": 0.6,
			"kube-apiserver": 0.3}, window: 2 * time.Second, want: 0.3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, busiest(tt.used, tt.window)); diff != "" {
				t.Errorf("busiest (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClientConfig(t *testing.T) {
	plain := func(cfg *rest.Config) { cfg.DisableCompression = true }
	tests := []struct {
		name   string
		config func(*rest.Config)
		want   bool // DisableCompression of the manager's copy
	}{
		{name: "no adjustment", want: false},
		{name: "adjusted", config: plain, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := &rest.Config{Host: "https://127.0.0.1:6443"}
			got := Implementation{Config: tt.config}.clientConfig(base)
			if diff := cmp.Diff(tt.want, got.DisableCompression); diff != "" {
				t.Errorf("DisableCompression (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff("https://127.0.0.1:6443", got.Host); diff != "" {
				t.Errorf("Host (-want +got):\n%s", diff)
			}
			if base.DisableCompression {
				t.Error("the base configuration was changed; want a copy adjusted")
			}
		})
	}
}

func TestRestartName(t *testing.T) {
	cases := map[string]struct {
		restarts, i int
		want        string
	}{
		"one a round: the phase's name, as before": {restarts: 1, i: 1, want: "restart"},
		"several: numbered from 1":                 {restarts: 3, i: 1, want: "restart-1"},
		"several: the last":                        {restarts: 3, i: 3, want: "restart-3"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &run{cfg: &config{restarts: tc.restarts}}
			if diff := cmp.Diff(tc.want, r.restartName("restart", tc.i)); diff != "" {
				t.Errorf("restartName (-want +got):\n%s", diff)
			}
		})
	}
}
