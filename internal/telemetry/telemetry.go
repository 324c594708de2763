package telemetry

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// StartSpan starts the span name under the span in ctx, from that span's tracer provider and with the
// tracer named tracer: called without a span in ctx (no tracing), it starts a no-op span.
func StartSpan(ctx context.Context, tracer, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer(tracer).Start(ctx, name, trace.WithAttributes(attrs...))
}

// EndSpan records err, if any, on span (as an event and the span's status) and ends it.
func EndSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Register adds the collectors to controller-runtime's registry (served by the manager's metrics
// endpoint). A collector someone else registered under the same name is left in place; an invalid one
// panics, being a programming error.
func Register(collectors ...prometheus.Collector) {
	for _, c := range collectors {
		if err := metrics.Registry.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if !errors.As(err, &already) {
				panic(err)
			}
		}
	}
}
