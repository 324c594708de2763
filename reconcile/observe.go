package reconcile

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ReconcileObserver is told when a reconcile of one object starts, and the function it returns is
// called with the reconcile's outcome when it ends. Tests use it to wait until a given object has
// really been reconciled again (testing/optest.Reconciles); operators can use it for tracing. It runs
// on the worker goroutine, so it must be quick.
type ReconcileObserver func(ctx context.Context, req ctrl.Request) (done func(ctrl.Result, error))

// WithReconcileObserver calls o around every reconcile of the controller.
func WithReconcileObserver(o ReconcileObserver) ReconcilerOption {
	return func(c *reconcilerConfig) { c.observer = o }
}

// observed is the controller's reconciler when an observer is set.
type observed struct {
	next     ctrlreconcile.Reconciler
	observer ReconcileObserver
}

func (o observed) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	done := o.observer(ctx, req)
	res, err := o.next.Reconcile(ctx, req)
	if done != nil {
		done(res, err)
	}
	return res, err
}
