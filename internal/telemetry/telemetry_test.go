package telemetry

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestEndSpan(t *testing.T) {
	cases := map[string]struct {
		err  error
		want codes.Code
	}{
		"ok":     {want: codes.Unset},
		"failed": {err: errors.New("refused"), want: codes.Error},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			_, span := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("t").Start(t.Context(), "step")
			EndSpan(span, tc.err)
			ended := rec.Ended()
			if len(ended) != 1 {
				t.Fatalf("%d spans ended, want 1", len(ended))
			}
			if diff := cmp.Diff(tc.want, ended[0].Status().Code); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRegisterTwice(t *testing.T) {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "convergo_telemetry_test_total", Help: "test"})
	Register(c)
	Register(prometheus.NewCounter(prometheus.CounterOpts{Name: "convergo_telemetry_test_total", Help: "test"})) // left in place, no panic
}
