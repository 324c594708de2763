package reconcile

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// reconcileObserver is ContextWithObserver's function.
type reconcileObserver = func(ctx context.Context, req ctrl.Request) (done func(ctrl.Result, error))

// observerKey is the context key of ContextWithObserver's function.
type observerKey struct{}

// ContextWithObserver returns a copy of ctx under which every Reconciler calls o when a reconcile of
// one object starts, and the function o returns (if not nil) with the reconcile's outcome when it
// ends. A manager hands its controllers the context of ctrl.Options.BaseContext, and each reconcile's
// context derives from it, so setting BaseContext observes every Reconciler of the manager without
// touching how they are set up. Tests use it to wait until a given object has really been reconciled
// again (testing/optest.StartOperator does); it runs on the worker goroutine, so it must be quick.
//
//	opts.BaseContext = func() context.Context {
//		return reconcile.ContextWithObserver(context.Background(), recs.Observe)
//	}
func ContextWithObserver(ctx context.Context, o func(ctx context.Context, req ctrl.Request) (done func(ctrl.Result, error))) context.Context {
	return context.WithValue(ctx, observerKey{}, reconcileObserver(o))
}

// observed is the controller's reconciler: it reports each reconcile to the observer in its context.
type observed struct {
	next ctrlreconcile.Reconciler
}

func (o observed) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	observer, _ := ctx.Value(observerKey{}).(reconcileObserver)
	if observer == nil {
		return o.next.Reconcile(ctx, req)
	}
	done := observer(ctx, req)
	res, err := o.next.Reconcile(ctx, req)
	if done != nil {
		done(res, err)
	}
	return res, err
}
