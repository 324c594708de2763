package bench

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

func TestRegisteredCounter(t *testing.T) {
	opts := prometheus.CounterOpts{Name: "things_total", Help: "things done"}
	cases := map[string]struct {
		register bool
		opts     prometheus.CounterOpts
		labels   []string
		wantErr  bool
	}{
		"registered":        {register: true, opts: opts, labels: []string{"controller", "result"}},
		"not registered":    {opts: opts, labels: []string{"controller", "result"}, wantErr: true},
		"another help":      {register: true, opts: prometheus.CounterOpts{Name: opts.Name, Help: "other"}, labels: []string{"controller", "result"}, wantErr: true},
		"other label names": {register: true, opts: opts, labels: []string{"controller"}, wantErr: true},
		"another counter":   {register: true, opts: prometheus.CounterOpts{Name: "other_total", Help: "things done"}, labels: []string{"controller", "result"}, wantErr: true},
	}
	for name, tt := range cases {
		t.Run(name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			vec := prometheus.NewCounterVec(opts, []string{"controller", "result"})
			if tt.register {
				reg.MustRegister(vec)
			}
			vec.WithLabelValues("welcome", "success").Add(5)
			vec.WithLabelValues("welcome", "error").Add(2)
			vec.WithLabelValues("receiver", "success").Add(1)

			got, err := registeredCounter(reg, tt.opts, tt.labels...)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("registeredCounter found %v, want an error", got)
				}
				families, gerr := reg.Gather()
				if gerr != nil {
					t.Fatalf("gather: %v", gerr)
				}
				want := 0 // the probe is not left registered
				if tt.register {
					want = 1
				}
				if diff := cmp.Diff(want, len(families)); diff != "" {
					t.Errorf("families left registered (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("registeredCounter: %v", err)
			}
			n, err := countOf(got)
			if err != nil {
				t.Fatalf("countOf: %v", err)
			}
			if diff := cmp.Diff(8, n); diff != "" {
				t.Errorf("count (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReconcileCountReadsControllerRuntimesCounter checks that reconcileCount finds the counter
// controller-runtime's controllers increment, and counts as a gather of the whole registry does.
func TestReconcileCountReadsControllerRuntimesCounter(t *testing.T) {
	total, err := reconcileTotal()
	if err != nil {
		t.Fatalf("controller-runtime's reconcile counter not found (its help or labels changed?): %v", err)
	}
	vec, ok := total.(*prometheus.CounterVec)
	if !ok {
		t.Fatalf("reconcile counter is a %T, want a *prometheus.CounterVec", total)
	}
	vec.WithLabelValues("bench-test", "success").Add(3)
	got, err := reconcileCount()
	if err != nil {
		t.Fatalf("reconcileCount: %v", err)
	}
	want, err := statsFrom(ctrlmetrics.Registry)
	if err != nil {
		t.Fatalf("statsFrom: %v", err)
	}
	if want.count < 3 {
		t.Fatalf("gathered count %d, want at least the 3 added", want.count)
	}
	if diff := cmp.Diff(want.count, got); diff != "" {
		t.Errorf("reconcileCount (-gathered +got):\n%s", diff)
	}
}

func BenchmarkReconcileCount(b *testing.B) {
	for b.Loop() {
		if _, err := reconcileCount(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReconcilesGather(b *testing.B) {
	for b.Loop() {
		if _, err := reconciles(); err != nil {
			b.Fatal(err)
		}
	}
}
