package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/convergo-dev/convergo/status"
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
	// waited, when set, is told each place taken: its lane and how long the reconcile waited for it
	// (0 when one was free). controller-runtime's reconcile time includes that wait.
	waited func(deleting bool, d time.Duration)
	now    func() time.Time
	onWait func() // called when a reconcile starts to wait for a place; for tests
}

// newWorkerGate returns a gate with others places for the objects not being deleted and deleting for
// those being deleted.
func newWorkerGate(others, deleting int) *workerGate {
	return &workerGate{others: make(chan struct{}, others), deleting: make(chan struct{}, deleting), now: time.Now}
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
		g.took(deleting, 0)
		return func() { <-lane }, false, nil
	default:
	}
	start := g.now()
	if g.onWait != nil {
		g.onWait()
	}
	select {
	case lane <- struct{}{}:
		g.took(deleting, g.now().Sub(start))
		return func() { <-lane }, true, nil
	case <-ctx.Done():
		return nil, true, fmt.Errorf("wait for a reconcile place: %w", ctx.Err())
	}
}

// took tells waited that a place in the deleting lane (or the others') was taken after a wait of d.
func (g *workerGate) took(deleting bool, d time.Duration) {
	if g.waited != nil {
		g.waited(deleting, d)
	}
}

// admit takes a place for a reconcile of obj in the lane its deletion state names. A reconcile that had
// to wait reads the object again with read, since the object may have changed meanwhile: when its
// deletion started during the wait, the place is given back and one is taken in the deletion lane, so
// that an object is always finalized in a deletion place, whatever was read before the wait (a
// reconcile queued while the object was live would otherwise hold the others' places for the whole
// deletion). It returns the object as last read (the zero T when it is gone, with no place held) and
// the function that gives the place back.
func admit[T status.Object](ctx context.Context, g *workerGate, obj T, read func() (T, error)) (T, func(), error) {
	for {
		deleting := obj.GetDeletionTimestamp() != nil
		release, waited, err := g.enter(ctx, deleting)
		if err != nil || !waited {
			return obj, release, err
		}
		if obj, err = read(); err != nil || isZero(obj) {
			release()
			return obj, nil, err // a read error is the reconcile's, not a wait's
		}
		if (obj.GetDeletionTimestamp() != nil) == deleting {
			return obj, release, nil
		}
		release() // a deletion started during the wait: its lane
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
