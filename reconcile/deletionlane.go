package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// A deletion pass is mostly round trips to the API server, one after the other: a layer of children,
// the next once the first is gone, then the finalizer. The garbage collector, which deletes the
// children of owners without a finalizer, runs 20 workers (kube-controller-manager's
// --concurrent-gc-syncs); a Reconciler's deletions share its few reconcile workers with everything
// else. WithDeletionConcurrency gives the objects being deleted places of their own: the controller
// runs both numbers of workers, one queue (so an object is still never reconciled twice at once),
// and each reconcile takes a place in its lane, deleting or not, once it has read the object.

// workerGate holds the places of the two lanes. A nil gate lets every reconcile in (direct Reconcile
// calls, and Reconcilers without WithDeletionConcurrency).
type workerGate struct {
	others, deleting chan struct{}
}

// newWorkerGate returns a gate with others places for the objects not being deleted and deleting for
// those being deleted.
func newWorkerGate(others, deleting int) *workerGate {
	return &workerGate{others: make(chan struct{}, others), deleting: make(chan struct{}, deleting)}
}

// enter takes a place in the lane of a reconcile of an object being deleted (deleting) or not,
// waiting for one when the lane is full. It returns the function that gives the place back, and
// whether it had to wait (the object read before may be stale then). An error means ctx ended first.
func (g *workerGate) enter(ctx context.Context, deleting bool) (release func(), waited bool, err error) {
	if g == nil {
		return func() {}, false, nil
	}
	lane := g.others
	if deleting {
		lane = g.deleting
	}
	select {
	case lane <- struct{}{}:
		return func() { <-lane }, false, nil
	default:
	}
	select {
	case lane <- struct{}{}:
		return func() { <-lane }, true, nil
	case <-ctx.Done():
		return nil, true, fmt.Errorf("wait for a reconcile place: %w", ctx.Err())
	}
}

// notEnteredRequeue is how soon a reconcile whose wait for a place was canceled asks to run again.
const notEnteredRequeue = time.Second

// notEntered is what Reconcile returns when it could not take a place (err from enter). A canceled
// context means the manager is stopping: the reconcile asks to run again rather than fail, so no
// error is logged for every worker waiting at a stop (the stopped queue drops the request; a caller of
// Reconcile still learns the object was not reconciled). Any other end, such as controller-runtime's
// ReconciliationTimeout, is an error.
func notEntered(err error) (ctrl.Result, error) {
	if errors.Is(err, context.Canceled) {
		return ctrl.Result{RequeueAfter: notEnteredRequeue}, nil
	}
	return ctrl.Result{}, err
}
