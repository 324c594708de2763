package status_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/status"
)

// Micro-benchmarks of the condition helpers, with allocations reported. Run them with
//
//	go test -run '^$' -bench . -benchmem ./status/
//
// The steady state of a converged object (setting what is already there) matters most: a controller
// does it on every reconcile.

// benchWidget returns a Widget at generation 3 with a converged set of conditions.
func benchWidget() *testapi.Widget {
	w := &testapi.Widget{}
	w.Name, w.Namespace, w.Generation = "w", "ns", 3
	for _, typ := range []string{"Available", "Configured", "Progressing"} {
		status.Set(w, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "AsExpected", Message: fmt.Sprintf("%s is as expected", typ)})
	}
	status.MarkReady(w, "Succeeded", "all children are ready")
	return w
}

func BenchmarkSet(b *testing.B) {
	cases := map[string]struct {
		conds func(i int) metav1.Condition
	}{
		// The same condition again: nothing changes.
		"unchanged": {conds: func(int) metav1.Condition {
			return metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: "AsExpected", Message: "Available is as expected"}
		}},
		// A message that changes every time, status kept: lastTransitionTime kept.
		"message changed": {conds: func(i int) metav1.Condition {
			msg := "odd"
			if i%2 == 0 {
				msg = "even"
			}
			return metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: "AsExpected", Message: msg}
		}},
		// A status that flips every time: a transition each call.
		"status flipped": {conds: func(i int) metav1.Condition {
			s := metav1.ConditionTrue
			if i%2 == 0 {
				s = metav1.ConditionFalse
			}
			return metav1.Condition{Type: "Available", Status: s, Reason: "AsExpected", Message: "flipping"}
		}},
	}
	for name, tc := range cases {
		b.Run(name, func(b *testing.B) {
			w := benchWidget()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				status.Set(w, tc.conds(i))
				i++
			}
		})
	}
}

func BenchmarkMarkReady(b *testing.B) {
	b.Run("unchanged", func(b *testing.B) {
		w := benchWidget()
		b.ReportAllocs()
		for b.Loop() {
			if status.MarkReady(w, "Succeeded", "all children are ready") {
				b.Fatal("MarkReady changed a Ready object")
			}
		}
	})
	b.Run("from reconciling", func(b *testing.B) {
		w := benchWidget()
		b.ReportAllocs()
		for b.Loop() {
			status.MarkReconciling(w, "Progressing", "deployment: 0/1 replicas available")
			status.MarkReady(w, "Succeeded", "all children are ready")
		}
	})
}

func BenchmarkMarkReconciling(b *testing.B) {
	w := benchWidget()
	status.MarkReconciling(w, "Progressing", "deployment: 0/1 replicas available")
	b.ReportAllocs()
	for b.Loop() {
		if status.MarkReconciling(w, "Progressing", "deployment: 0/1 replicas available") {
			b.Fatal("MarkReconciling changed an object already Reconciling for the same reason")
		}
	}
}

func BenchmarkMarkStalled(b *testing.B) {
	w := benchWidget()
	status.MarkStalled(w, "InvalidSpec", "spec.port: must be at most 65535")
	b.ReportAllocs()
	for b.Loop() {
		status.MarkStalled(w, "InvalidSpec", "spec.port: must be at most 65535")
	}
}

func BenchmarkGet(b *testing.B) {
	w := benchWidget()
	b.ReportAllocs()
	for b.Loop() {
		if meta.FindStatusCondition(w.GetConditions(), "Progressing") == nil {
			b.Fatal("Progressing not found")
		}
	}
}

func BenchmarkIsReady(b *testing.B) {
	w := benchWidget()
	b.ReportAllocs()
	for b.Loop() {
		if !status.IsReady(w) {
			b.Fatal("not ready")
		}
	}
}

func BenchmarkSummarize(b *testing.B) {
	summary := status.Summary{Conditions: []string{"Available", "Configured", "Progressing"}, NegativePolarity: []string{"Degraded"}}
	b.Run("ready unchanged", func(b *testing.B) {
		w := benchWidget()
		status.Summarize(w, summary)
		b.ReportAllocs()
		for b.Loop() {
			if status.Summarize(w, summary) {
				b.Fatal("Summarize changed a summarized object")
			}
		}
	})
	b.Run("one sub-condition false", func(b *testing.B) {
		w := benchWidget()
		status.Set(w, metav1.Condition{Type: "Configured", Status: metav1.ConditionFalse, Reason: "Missing", Message: "config map not found"})
		status.Summarize(w, summary)
		b.ReportAllocs()
		for b.Loop() {
			status.Summarize(w, summary)
		}
	})
}

// BenchmarkPatcherUnchanged measures the check that lets a reconcile of a converged object send no
// status write: the status compared with the copy taken before, nothing sent.
func BenchmarkPatcherUnchanged(b *testing.B) {
	scheme := runtime.NewScheme()
	if err := testapi.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	p := status.NewPatcher(fake.NewClientBuilder().WithScheme(scheme).Build())
	w := benchWidget()
	w.Status.Summary = "3 children ready"
	w.Status.ReadyChildren = 3
	before := w.DeepCopy()
	b.ReportAllocs()
	for b.Loop() {
		status.MarkReady(w, "Succeeded", "all children are ready")
		wrote, err := p.Patch(b.Context(), w, before)
		if err != nil || wrote {
			b.Fatalf("Patch of an unchanged status: wrote %v, error %v", wrote, err)
		}
	}
}
