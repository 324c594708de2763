package graph

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/convergo-dev/convergo/internal/telemetry"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/prometheus/client_golang/prometheus"
)

// tracerName names the tracer of the graph's spans.
const tracerName = "github.com/convergo-dev/convergo/reconcile/graph"

// Span attributes the graph sets.
const (
	attrNode      = attribute.Key("convergo.node")
	attrOperation = attribute.Key("convergo.operation")
	attrReady     = attribute.Key("convergo.ready")
	attrReason    = attribute.Key("convergo.reason")
	attrKind      = attribute.Key("convergo.kind")
	attrID        = attribute.Key("convergo.external.id")
	attrCount     = attribute.Key("convergo.count")
	attrGone      = attribute.Key("convergo.gone")
)

// startSpan starts a span of the graph under the span in ctx: a graph called without a span in ctx
// (no tracing) starts no-op spans.
func startSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return telemetry.StartSpan(ctx, tracerName, name, attrs...)
}

// endChildSpan records a node's result on its span, and err, and ends it.
func endChildSpan(span trace.Span, cr ChildResult, err error) {
	if cr.Operation != "" {
		span.SetAttributes(attrOperation.String(string(cr.Operation)))
	}
	span.SetAttributes(attrReady.Bool(cr.Ready))
	if cr.Reason != "" {
		span.SetAttributes(attrReason.String(cr.Reason))
	}
	telemetry.EndSpan(span, err)
}

// deleteAttrs are the attributes of a delete step's span.
func deleteAttrs(step apply.DeleteStep) []attribute.KeyValue {
	return []attribute.KeyValue{attrGone.Bool(step.Live == nil), attribute.Bool("convergo.delete_sent", step.Sent != nil)}
}

// externalCallSeconds is the latency of calls to external systems, by kind, step and result.
var externalCallSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "convergo_external_call_duration_seconds",
	Help:    "Latency of calls to an external node's system by kind, step (observe, apply, delete, release) and result (ok, error).",
	Buckets: prometheus.ExponentialBuckets(0.001, 4, 8), // 1 ms to 16 s
}, []string{"kind", "step", "result"})

func init() { telemetry.Register(externalCallSeconds) }

// traced runs one call to an external system as a span ("<kind> <step>") and counts its latency.
func traced[R any](ctx context.Context, kind, step, id string, call func(context.Context) (R, error)) (R, error) {
	ctx, span := startSpan(ctx, kind+" "+step, attrKind.String(kind), attrID.String(id))
	began := time.Now()
	out, err := call(ctx)
	result := "ok"
	if err != nil {
		result = "error"
	}
	externalCallSeconds.WithLabelValues(kind, step, result).Observe(time.Since(began).Seconds())
	telemetry.EndSpan(span, err)
	return out, err
}

// tracedCall is traced for a call that returns only an error.
func tracedCall(ctx context.Context, kind, step, id string, call func(context.Context) error) error {
	_, err := traced(ctx, kind, step, id, func(ctx context.Context) (struct{}, error) { return struct{}{}, call(ctx) })
	return err
}
