//go:build integration

package reconcile_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/testing/harness"
	"github.com/convergo-dev/convergo/testing/jaeger"
)

// spanAttr returns the value of the attribute key of span, "" when it has none.
func spanAttr(span sdktrace.ReadOnlySpan, key string) string {
	for _, a := range span.Attributes() {
		if string(a.Key) == key {
			return a.Value.Emit()
		}
	}
	return ""
}

// TestIntegrationReconcilerTrace: with WithTracerProvider, each reconcile is a span named for the
// controller with the object and why it ran: "created" for the Widget's creation, "child" naming the
// ConfigMap whose change brought it (the test annotates it ready; later it changes its data by hand).
// Under it, one span per node in dependency order ("apply config" ends before "apply derived"
// starts), with the verdict and, for the child changed by hand, what drifted; the status patch; and
// the Status hook's own span, since the hook receives the reconcile's context. Each child's
// convergo.dev/written-for names the trigger of the reconcile that last wrote it.
func TestIntegrationReconcilerTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.WithoutCancel(t.Context())) })
	wt := newWidgetTestWith(t, reconcile.Hooks[*testapi.Widget]{Status: func(ctx context.Context, _ *testapi.Widget, _ *graph.Result) error {
		_, span := trace.SpanFromContext(ctx).TracerProvider().Tracer("author").Start(ctx, "author status")
		span.End()
		return nil
	}}, reconcile.WithTracerProvider(tp))
	w := wt.create(t, "traced", testapi.WidgetSpec{Data: map[string]string{"k": "v"}})
	wt.annotateReadyWhenCreated(t, "traced-config")
	wt.waitWidget(t, w, "Ready", isReady)

	// The config's data changed by hand: the owner is woken by it and repairs it.
	cm := &corev1.ConfigMap{}
	if err := wt.client.Get(t.Context(), client.ObjectKey{Namespace: wt.ns, Name: "traced-config"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "changed by hand"
	if err := wt.client.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	var drifted sdktrace.ReadOnlySpan
	harness.Eventually(t, time.Minute, func() (bool, string) {
		for _, s := range rec.Ended() {
			if s.Name() == "apply config" && spanAttr(s, "convergo.drift") != "" {
				drifted = s
				return true, ""
			}
		}
		return false, "no apply config span with convergo.drift"
	})

	spans := rec.Ended()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	parent := func(s sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan { return byID[s.Parent().SpanID()] }
	var reconciles []string
	for _, s := range spans {
		if s.Name() != wt.name || spanAttr(s, "k8s.object.name") != "traced" {
			continue
		}
		var children []string
		for _, c := range spans {
			if c.Parent().SpanID() == s.SpanContext().SpanID() {
				children = append(children, c.Name())
			}
		}
		if g := spanAttr(s, "k8s.object.generation"); g != "1" {
			t.Errorf("reconcile span's k8s.object.generation = %q, want 1", g)
		}
		reconciles = append(reconciles, fmt.Sprintf("%s %s %s: %s", spanAttr(s, "convergo.trigger"), spanAttr(s, "convergo.trigger.object"),
			spanAttr(s, "convergo.result"), strings.Join(children, ", ")))
	}
	// The first reconcile, for the creation: the finalizer, the config (derived waits for it), the
	// author's span, the status patch.
	if len(reconciles) == 0 || !strings.HasPrefix(reconciles[0], "created  waiting: ") {
		t.Errorf("first reconcile: %q, want trigger created, result waiting", reconciles)
	}
	want := "child ConfigMap " + wt.ns + "/traced-config ready: "
	if !slices.ContainsFunc(reconciles, func(r string) bool {
		return strings.HasPrefix(r, want) && strings.Contains(r, "apply config, apply derived") && strings.Contains(r, "author status") && strings.Contains(r, "status patch")
	}) {
		t.Errorf("no reconcile %q... with apply config, apply derived, author status, status patch under it; reconciles:\n%s", want, strings.Join(reconciles, "\n"))
	}

	// Node spans of one reconcile run in dependency order.
	for _, s := range spans {
		if s.Name() != "apply derived" {
			continue
		}
		for _, c := range spans {
			if c.Name() == "apply config" && c.Parent().SpanID() == s.Parent().SpanID() && c.EndTime().After(s.StartTime()) {
				t.Errorf("apply derived started at %v, before apply config ended at %v", s.StartTime(), c.EndTime())
			}
		}
	}
	type node struct{ Operation, Drift, Trigger, By string }
	p := parent(drifted)
	got := node{spanAttr(drifted, "convergo.operation"), spanAttr(drifted, "convergo.drift"), spanAttr(p, "convergo.trigger"), spanAttr(p, "convergo.trigger.object")}
	if diff := cmp.Diff(node{"Updated", ".data.k", "child", "ConfigMap " + wt.ns + "/traced-config"}, got); diff != "" {
		t.Errorf("the repair (-want +got):\n%s", diff)
	}

	// Each child records what its last write was for: config its repair, derived its creation
	// (brought by config's readiness).
	written := map[string]string{}
	for _, name := range []string{"traced-config", "traced-derived"} {
		cm := &corev1.ConfigMap{}
		if err := wt.client.Get(t.Context(), client.ObjectKey{Namespace: wt.ns, Name: name}, cm); err != nil {
			t.Fatal(err)
		}
		written[name] = cm.Annotations["convergo.dev/written-for"]
	}
	wantWritten := map[string]string{
		"traced-config":  "child ConfigMap " + wt.ns + "/traced-config",
		"traced-derived": "child ConfigMap " + wt.ns + "/traced-config",
	}
	if diff := cmp.Diff(wantWritten, written); diff != "" {
		t.Errorf("convergo.dev/written-for (-want +got):\n%s", diff)
	}
}

// TestIntegrationReconcilerMetrics: the metrics answer an operator's questions about one Widget's
// life: which condition it holds (convergo_objects), which node wrote what (convergo_node_writes_total,
// a repaired drift and an applied spec change counted as Updated), which writes repaired drift
// (convergo_drift_repairs_total: the hand change, not the spec change), why reconciles ran (convergo_reconcile_triggers_total) and how
// long its deletion took (convergo_deletion_duration_seconds).
func TestIntegrationReconcilerMetrics(t *testing.T) {
	wt := newWidgetTest(t)
	c := wt.name
	w := wt.create(t, "measured", testapi.WidgetSpec{Data: map[string]string{"k": "v"}})
	wt.annotateReadyWhenCreated(t, "measured-config")
	wt.waitWidget(t, w, "Ready", isReady)
	harness.Eventually(t, time.Minute, func() (bool, string) {
		got := metricValue(t, "convergo_objects", map[string]string{"controller": c, "condition": "Ready"})
		return got == 1, fmt.Sprintf("convergo_objects{condition=Ready} = %v, want 1", got)
	})
	cm := &corev1.ConfigMap{}
	if err := wt.client.Get(t.Context(), client.ObjectKey{Namespace: wt.ns, Name: "measured-config"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "changed by hand"
	if err := wt.client.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, time.Minute, func() (bool, string) {
		got := metricValue(t, "convergo_node_writes_total", map[string]string{"controller": c, "node": "config", "operation": "Updated"})
		return got == 1, fmt.Sprintf("convergo_node_writes_total{node=config,operation=Updated} = %v, want 1 (the repair)", got)
	})
	// A spec change is applied: config is updated again, and that is no repair.
	harness.Eventually(t, time.Minute, func() (bool, string) {
		fresh := &testapi.Widget{}
		if err := wt.client.Get(t.Context(), client.ObjectKeyFromObject(w), fresh); err != nil {
			return false, err.Error()
		}
		fresh.Spec.Data = map[string]string{"k": "v2"}
		err := wt.client.Update(t.Context(), fresh)
		return err == nil, fmt.Sprintf("update the Widget: %v", err)
	})
	harness.Eventually(t, time.Minute, func() (bool, string) {
		got := metricValue(t, "convergo_node_writes_total", map[string]string{"controller": c, "node": "config", "operation": "Updated"})
		return got == 2, fmt.Sprintf("convergo_node_writes_total{node=config,operation=Updated} = %v, want 2 (the repair, the spec change)", got)
	})
	type figures struct{ CreatedConfig, CreatedDerived, ByCreation, ByChild, RepairedConfig, RepairedDerived float64 }
	got := figures{
		metricValue(t, "convergo_node_writes_total", map[string]string{"controller": c, "node": "config", "operation": "Created"}),
		metricValue(t, "convergo_node_writes_total", map[string]string{"controller": c, "node": "derived", "operation": "Created"}),
		metricValue(t, "convergo_reconcile_triggers_total", map[string]string{"controller": c, "trigger": "created"}),
		min(metricValue(t, "convergo_reconcile_triggers_total", map[string]string{"controller": c, "trigger": "child"}), 1),
		metricValue(t, "convergo_drift_repairs_total", map[string]string{"controller": c, "node": "config"}),
		metricValue(t, "convergo_drift_repairs_total", map[string]string{"controller": c, "node": "derived"}),
	}
	if diff := cmp.Diff(figures{1, 1, 1, 1, 1, 0}, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}

	if err := wt.client.Delete(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	harness.WaitForDeletion(t, wt.client, w, time.Minute)
	harness.Eventually(t, time.Minute, func() (bool, string) {
		deletions := metricValue(t, "convergo_deletion_duration_seconds", map[string]string{"controller": c})
		ready := metricValue(t, "convergo_objects", map[string]string{"controller": c, "condition": "Ready"})
		deleting := metricValue(t, "convergo_objects", map[string]string{"controller": c, "condition": "Reconciling"})
		return deletions == 1 && ready == 0 && deleting == 0, fmt.Sprintf("deletions timed %v, objects Ready %v, Reconciling %v; want 1, 0, 0", deletions, ready, deleting)
	})
}

// TestIntegrationReconcilerTraceInJaeger: the spans reach a real trace backend whole. A Widget's
// reconciles are traced to a private Jaeger over OTLP and read back through its query API: the
// reconcile of the Widget's creation is a root span named for the controller with trigger
// "created"; the finalizer, node and status spans are its children; in the reconcile config's
// readiness brought (trigger "child", naming config), which creates derived, "apply config" ends
// before "apply derived" starts.
func TestIntegrationReconcilerTraceInJaeger(t *testing.T) {
	j := jaeger.Start(t)
	tp := j.TracerProvider(t, "widget-operator")
	wt := newWidgetTestWith(t, reconcile.Hooks[*testapi.Widget]{}, reconcile.WithTracerProvider(tp))
	w := wt.create(t, "jaeger", testapi.WidgetSpec{Data: map[string]string{"k": "v"}})
	wt.annotateReadyWhenCreated(t, "jaeger-config")
	wt.waitWidget(t, w, "Ready", isReady)
	if err := tp.ForceFlush(t.Context()); err != nil {
		t.Fatal(err)
	}

	// isReconcile matches the root span of one of this Widget's reconciles with trigger.
	isReconcile := func(trigger string) func(jaeger.Span) bool {
		return func(s jaeger.Span) bool {
			return s.Name == wt.name && s.ParentID == "" && s.Attributes["k8s.object.name"] == "jaeger" &&
				s.Attributes["convergo.trigger"] == trigger
		}
	}
	var created, child jaeger.Trace
	harness.Eventually(t, time.Minute, func() (bool, string) {
		traces, err := j.Traces(t.Context(), "widget-operator")
		if err != nil {
			return false, err.Error()
		}
		created, child = jaeger.Trace{}, jaeger.Trace{}
		for _, tr := range traces {
			if _, ok := tr.Find(isReconcile("created")); ok && created.ID == "" {
				created = tr
			}
			if _, ok := tr.Find(func(s jaeger.Span) bool {
				return s.Name == "apply derived" && s.Attributes["convergo.operation"] == "Created"
			}); ok {
				if _, ok := tr.Find(isReconcile("child")); ok {
					child = tr
				}
			}
		}
		return created.ID != "" && child.ID != "", fmt.Sprintf("%d traces; none yet of the creation's reconcile and of the one creating derived", len(traces))
	})
	t.Logf("the reconcile a child's readiness brought, as Jaeger holds it:\n%s", child.Tree("convergo.trigger", "convergo.trigger.object", "convergo.result", "convergo.operation"))

	root, _ := created.Find(isReconcile("created"))
	var names []string
	for _, s := range created.Children(root.ID) {
		names = append(names, s.Name)
	}
	if diff := cmp.Diff([]string{"finalizer", "apply config", "status patch"}, names); diff != "" {
		t.Errorf("spans under the creation's reconcile, by start (-want +got):\n%s", diff)
	}
	root, _ = child.Find(isReconcile("child"))
	if got, want := root.Attributes["convergo.trigger.object"], "ConfigMap "+wt.ns+"/jaeger-config"; got != want {
		t.Errorf("trigger object %q, want %q", got, want)
	}
	config, _ := child.Find(func(s jaeger.Span) bool { return s.Name == "apply config" })
	derived, _ := child.Find(func(s jaeger.Span) bool { return s.Name == "apply derived" })
	if config.ParentID != root.ID || derived.ParentID != root.ID {
		t.Errorf("apply config's parent %q, apply derived's %q: want both the reconcile span %q", config.ParentID, derived.ParentID, root.ID)
	}
	if derived.Start.Before(config.End()) {
		t.Errorf("apply derived started at %v, before apply config ended at %v", derived.Start, config.End())
	}
}
