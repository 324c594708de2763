package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"k8s.io/client-go/rest"

	"github.com/convergo-dev/convergo/testing/jaeger"
)

// traceService is the service name of the operators' spans in Jaeger.
const traceService = "convergo-demo"

// tracing is the demo's trace backend and the tracer provider that sends to it.
type tracing struct {
	jaeger *jaeger.Server
	tp     *sdktrace.TracerProvider
}

// startTracing starts a private Jaeger (testing/jaeger) and makes a tracer provider that sends to
// it the global one: the operators trace with their defaults (reconcile.WithTracerProvider defaults
// to the global provider), and cfg's API requests are traced through client-go's public extension,
// rest.Config.Wrap, nested under the reconcile that sent them.
func startTracing(ctx context.Context, logOutput io.Writer, cfg *rest.Config) (*tracing, func(), error) {
	j, err := jaeger.New(ctx, jaeger.WithLogOutput(logOutput))
	if err != nil {
		return nil, nil, fmt.Errorf("start jaeger: %w", err)
	}
	tp, err := j.NewTracerProvider(ctx, traceService)
	if err != nil {
		_ = j.Close()
		return nil, nil, err
	}
	previous := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return otelhttp.NewTransport(rt) })
	stop := func() {
		otel.SetTracerProvider(previous)
		_ = tp.Shutdown(context.Background())
		_ = j.Close()
	}
	return &tracing{jaeger: j, tp: tp}, stop, nil
}

// showTrace prints, from Jaeger, the span tree of the reconcile of the Welcome that scaled it to
// replicas (the trigger "changed": its own spec), and where to look for the others.
func (d *demo) showTrace(ctx context.Context, name string) error {
	if err := d.tracing.tp.ForceFlush(ctx); err != nil {
		return fmt.Errorf("send the traces to jaeger: %w", err)
	}
	isScale := func(s jaeger.Span) bool {
		return s.ParentID == "" && s.Attributes["k8s.object.kind"] == "Welcome" && s.Attributes["k8s.object.name"] == name &&
			s.Attributes["convergo.trigger"] == "changed"
	}
	updatesDeployment := func(s jaeger.Span) bool {
		return s.Name == "apply deployment" && s.Attributes["convergo.operation"] == "Updated"
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.timeout)
	defer cancel()
	for {
		traces, err := d.tracing.jaeger.Traces(ctx, traceService)
		if err != nil {
			return err
		}
		for _, tr := range traces {
			if _, ok := tr.Find(isScale); !ok {
				continue
			}
			if _, ok := tr.Find(updatesDeployment); !ok {
				continue
			}
			fmt.Fprintf(d.out, "The reconcile that scaled Welcome %s, as Jaeger holds it (trace %s):\n", name, tr.ID)
			for line := range strings.Lines(tr.Tree("convergo.trigger", "convergo.result", "convergo.operation", "convergo.drift", "http.response.status_code")) {
				fmt.Fprintf(d.out, "  %s", line)
			}
			fmt.Fprintf(d.out, "Every reconcile's trace: %s/api/traces?service=%s\n", d.tracing.jaeger.QueryURL(), traceService)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("jaeger holds no trace of a reconcile of Welcome %s triggered by its change that updated its Deployment: %w", name, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}
