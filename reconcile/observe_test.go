package reconcile

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestObservedReconcile(t *testing.T) {
	boom := errors.New("boom")
	tests := map[string]struct {
		res  ctrl.Result
		err  error
		want []string
	}{
		"success":     {want: []string{"start ns/a", "inner ns/a", "done ns/a {false 0s} <nil>"}},
		"requeue":     {res: ctrl.Result{RequeueAfter: time.Second}, want: []string{"start ns/a", "inner ns/a", "done ns/a {false 1s} <nil>"}},
		"inner error": {err: boom, want: []string{"start ns/a", "inner ns/a", "done ns/a {false 0s} boom"}},
		"no observer": {want: []string{"inner ns/a"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got []string
			inner := ctrlreconcile.Func(func(_ context.Context, req ctrl.Request) (ctrl.Result, error) {
				got = append(got, "inner "+req.String())
				return tc.res, tc.err
			})
			obs := func(_ context.Context, req ctrl.Request) func(ctrl.Result, error) {
				got = append(got, "start "+req.String())
				return func(res ctrl.Result, err error) {
					got = append(got, fmt.Sprintf("done %s {%v %v} %v", req, res.Requeue, res.RequeueAfter, err))
				}
			}
			req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}
			ctx := t.Context()
			if name != "no observer" {
				ctx = ContextWithObserver(ctx, obs)
			}
			res, err := observed{next: inner}.Reconcile(ctx, req)
			if res != tc.res || !errors.Is(err, tc.err) {
				t.Errorf("Reconcile = %v, %v; want the inner reconciler's %v, %v", res, err, tc.res, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}
