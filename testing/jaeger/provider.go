package jaeger

import (
	"context"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// NewTracerProvider returns an OpenTelemetry tracer provider that batches spans to this Jaeger over
// OTLP/HTTP, as service. The caller shuts it down (which sends what it holds); ForceFlush sends it
// earlier.
func (s *Server) NewTracerProvider(ctx context.Context, service string) (*sdktrace.TracerProvider, error) {
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(s.OTLPEndpoint()), otlptracehttp.WithInsecure())
	if err != nil {
		return nil, fmt.Errorf("create an OTLP exporter to jaeger: %w", err)
	}
	res := resource.NewSchemaless(semconv.ServiceName(service))
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// TracerProvider returns NewTracerProvider's provider for the test, shut down when the test ends.
// Call its ForceFlush before reading traces back with Traces.
func (s *Server) TracerProvider(t testing.TB, service string) *sdktrace.TracerProvider {
	t.Helper()
	tp, err := s.NewTracerProvider(t.Context(), service)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tp.Shutdown(context.WithoutCancel(t.Context())); err != nil {
			t.Errorf("shut the tracer provider down: %v", err)
		}
	})
	return tp
}
