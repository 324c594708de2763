package reconcile

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// reconcileObserver is WithReconcileObserver's function.
type reconcileObserver = func(ctx context.Context, req ctrl.Request) (done func(ctrl.Result, error))

// WithReconcileObserver calls o when a reconcile of one object starts, and the function it returns
// with the reconcile's outcome when it ends. Tests use it to wait until a given object has really
// been reconciled again (testing/optest.Reconciles.Observe); operators can use it for tracing. It
// runs on the worker goroutine, so it must be quick.
func WithReconcileObserver(o func(ctx context.Context, req ctrl.Request) (done func(ctrl.Result, error))) ReconcilerOption {
	return func(c *reconcilerConfig) { c.observer = o }
}

// observed is the controller's reconciler when an observer is set.
type observed struct {
	next     ctrlreconcile.Reconciler
	observer reconcileObserver
}

func (o observed) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	done := o.observer(ctx, req)
	res, err := o.next.Reconcile(ctx, req)
	if done != nil {
		done(res, err)
	}
	return res, err
}
