//go:build integration

package jaeger_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"

	"github.com/convergo-dev/convergo/testing/harness"
	"github.com/convergo-dev/convergo/testing/jaeger"
)

// TestIntegrationJaeger: two Jaegers run side by side (no fixed port); spans sent to one over OTLP
// come back through its query API with their parentage, service and attributes, and nothing reaches
// the other.
func TestIntegrationJaeger(t *testing.T) {
	j, other := jaeger.Start(t), jaeger.Start(t)
	tp := j.TracerProvider(t, "probe")
	ctx, root := tp.Tracer("test").Start(t.Context(), "root")
	_, child := tp.Tracer("test").Start(ctx, "child")
	child.SetAttributes(attribute.String("step", "one"))
	child.End()
	root.End()
	if err := tp.ForceFlush(t.Context()); err != nil {
		t.Fatal(err)
	}

	var got []jaeger.Trace
	harness.Eventually(t, time.Minute, func() (bool, string) {
		var err error
		got, err = j.Traces(t.Context(), "probe")
		if err != nil {
			return false, err.Error()
		}
		return len(got) == 1 && len(got[0].Spans) == 2, "the trace has not arrived whole"
	})
	type span struct{ Name, Service, Step string }
	var spans []span
	for _, s := range got[0].Spans {
		spans = append(spans, span{s.Name, s.Service, s.Attributes["step"]})
	}
	if diff := cmp.Diff([]span{{"root", "probe", ""}, {"child", "probe", "one"}}, spans); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
	if r, c := got[0].Spans[0], got[0].Spans[1]; c.ParentID != r.ID || r.ParentID != "" {
		t.Errorf("child's parent %q, root's ID %q and parent %q: want child under root", c.ParentID, r.ID, r.ParentID)
	}
	if diff := cmp.Diff("root (0s)\n  child (0s)\n", roundedTree(got[0])); diff != "" {
		t.Errorf("Tree (-want +got):\n%s", diff)
	}
	services, err := other.Services(context.WithoutCancel(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	if len(services) != 0 {
		t.Errorf("the other Jaeger holds traces of %v, want none", services)
	}
}

// roundedTree is the trace's tree with every duration zero, for a comparison that does not depend on
// time.
func roundedTree(tr jaeger.Trace) string {
	for i := range tr.Spans {
		tr.Spans[i].Duration = 0
	}
	return tr.Tree("none")
}
