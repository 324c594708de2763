package reconcile

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// TestLoggerOf: Reconcile logs with the logger controller-runtime put in its context, as it is (no
// WithValues, which a funcr logger answers with a new sink), or with controller-runtime's own when
// the context has none.
func TestLoggerOf(t *testing.T) {
	inCtx := funcr.New(func(string, string) {}, funcr.Options{}).WithValues("controller", "widget")
	cases := map[string]struct {
		ctx  context.Context
		want logr.LogSink
	}{
		"the context's":        {ctx: logr.NewContext(t.Context(), inCtx), want: inCtx.GetSink()},
		"controller-runtime's": {ctx: t.Context(), want: logf.Log.GetSink()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := loggerOf(tc.ctx).GetSink()
			if diff := cmp.Diff(true, got == tc.want); diff != "" {
				t.Errorf("loggerOf() sink is the expected one (-want +got):\n%s", diff)
			}
		})
	}
}
