package optest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/testing/harness"
)

// Mark is a point in the history a Reconciles records. Every start and every end of a reconcile takes
// the next mark, so a reconcile that started after mark m has Started > m.
type Mark uint64

// Reconcile is one reconcile of one object, as Reconciles recorded it.
type Reconcile struct {
	// Key names the reconciled object.
	Key client.ObjectKey
	// Started is the mark of its start.
	Started Mark
	// Finished is the mark of its end; 0 while it runs.
	Finished Mark
	// Result is what the reconcile returned, once it has finished.
	Result ctrl.Result
	// Err is the error the reconcile returned, once it has finished.
	Err error
}

// Done reports whether the reconcile has finished.
func (r Reconcile) Done() bool { return r.Finished != 0 }

// String renders the reconcile for failure messages.
func (r Reconcile) String() string {
	if !r.Done() {
		return fmt.Sprintf("%s started at %d, running", r.Key, r.Started)
	}
	return fmt.Sprintf("%s started at %d, finished at %d (requeue after %s, error %v)", r.Key, r.Started, r.Finished, r.Result.RequeueAfter, r.Err)
}

// Reconciles records, per object, the reconciles of a controller: when each started and finished, and
// what it returned. Observing gives its method Observe to a manager's controllers (StartOperator
// does). A test then waits for a
// reconcile of a given object that started after a point it chose (Mark, WaitFor), which an earlier
// queued reconcile or one of another object cannot satisfy, as a count of reconciles can.
//
// It is safe for concurrent use; the zero value is ready.
type Reconciles struct {
	mu    sync.Mutex
	now   Mark
	byKey map[client.ObjectKey][]*Reconcile
	// expected holds, per key, the expectations of ReconcileAfter being checked against the starts.
	expected map[client.ObjectKey][]*expectation
}

// NewReconciles returns an empty record.
func NewReconciles() *Reconciles { return &Reconciles{} }

// Observing returns the manager option under which every Convergo controller of the manager reports
// its reconciles to r: the manager's BaseContext (the context its controllers run under, the one it
// already had or context.Background) carries reconcile.ContextWithObserver(ctx, r.Observe).
//
//	env.StartManager(t, controller.SetupWithManager, recs.Observing())
func (r *Reconciles) Observing() harness.ManagerOption {
	return harness.WithManagerOptions(func(o *manager.Options) {
		base := o.BaseContext
		o.BaseContext = func() context.Context {
			ctx := context.Background()
			if base != nil {
				ctx = base()
			}
			return reconcile.ContextWithObserver(ctx, r.Observe)
		}
	})
}

// Observe records the start of a reconcile of req and returns the function that records its end. It
// is what reconcile.ContextWithObserver takes, and runs on the controller's worker goroutine.
//
// While an Operator.ReconcileAfter for req's object is running its write, Observe waits for the write
// to return (or ctx to end) before it records the start, so that it can tell whether the reconcile
// starts with the change in the cache; this delays only reconciles of that object, for the length of
// one write.
func (r *Reconciles) Observe(ctx context.Context, req ctrl.Request) (done func(ctrl.Result, error)) {
	key := req.NamespacedName
	met := r.checkStart(ctx, key)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.now++
	rec := &Reconcile{Key: key, Started: r.now}
	if r.byKey == nil {
		r.byKey = map[client.ObjectKey][]*Reconcile{}
	}
	r.byKey[key] = append(r.byKey[key], rec)
	for _, e := range met {
		if e.first == 0 {
			e.first = rec.Started
		}
	}
	return func(res ctrl.Result, err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.now++
		rec.Finished, rec.Result, rec.Err = r.now, res, err
	}
}

// Mark returns the current point in the history: the reconciles that start from now on have a larger
// Started.
func (r *Reconciles) Mark() Mark {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now
}

// Since returns the reconciles of key that started after m, oldest first (all of them for m = 0).
func (r *Reconciles) Since(key client.ObjectKey, m Mark) []Reconcile {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Reconcile
	for _, rec := range r.byKey[key] {
		if rec.Started > m {
			out = append(out, *rec)
		}
	}
	return out
}

// WaitFor waits until a reconcile of key that started after since has finished and returns the first
// such reconcile. On timeout the test fails with the reconciles of key since then.
//
//	since := recs.Mark()
//	// ... a change the cache already shows ...
//	rec := recs.WaitFor(t, key, since, optest.Timeout)
//
// A reconcile started after since reads a cache that shows every change the cache showed at since. To
// wait for a reconcile that reads a write of the test's own, use Operator.ReconcileAfter, which also
// waits for the cache to show it.
func (r *Reconciles) WaitFor(t testing.TB, key client.ObjectKey, since Mark, timeout time.Duration) Reconcile {
	t.Helper()
	var found Reconcile
	harness.Eventually(t, timeout, func() (bool, string) {
		var ok bool
		found, ok = r.finishedFrom(key, since+1)
		if ok {
			return true, ""
		}
		return false, fmt.Sprintf("no reconcile of %s that started after mark %d has finished; reconciles of it since then: %s",
			key, since, describe(r.Since(key, since)))
	})
	return found
}

// finishedFrom returns the first finished reconcile of key that started at from or later.
func (r *Reconciles) finishedFrom(key client.ObjectKey, from Mark) (Reconcile, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.byKey[key] {
		if rec.Started >= from && rec.Done() {
			return *rec, true
		}
	}
	return Reconcile{}, false
}

// expectation is a pending wait for a reconcile of key that starts while cond holds. Until ready is
// closed, cond is not known yet and starts of key wait for it.
type expectation struct {
	key   client.ObjectKey
	ready chan struct{}
	// cond is set before ready is closed; nil when the expectation was dropped before it was known.
	cond func(ctx context.Context) bool
	// armed reports whether ready is closed; first is the Started of the first reconcile of key that
	// began while cond held, 0 until then; waiting counts the starts waiting for ready. All three are
	// guarded by the Reconciles' mutex.
	armed   bool
	first   Mark
	waiting int
}

// expect registers an expectation for key: from now on, every start of key waits until arm (or drop)
// is called, then checks the condition given to arm.
func (r *Reconciles) expect(key client.ObjectKey) *expectation {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := &expectation{key: key, ready: make(chan struct{})}
	if r.expected == nil {
		r.expected = map[client.ObjectKey][]*expectation{}
	}
	r.expected[key] = append(r.expected[key], e)
	return e
}

// arm sets e's condition and lets the starts waiting for it go on. Only the first call counts.
func (r *Reconciles) arm(e *expectation, cond func(ctx context.Context) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.armed {
		return
	}
	e.cond, e.armed = cond, true
	close(e.ready)
}

// drop unregisters e; starts waiting for it go on without it.
func (r *Reconciles) drop(e *expectation) {
	r.arm(e, nil)
	r.mu.Lock()
	defer r.mu.Unlock()
	list := r.expected[e.key]
	for i, x := range list {
		if x == e {
			r.expected[e.key] = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(r.expected[e.key]) == 0 {
		delete(r.expected, e.key)
	}
}

// checkStart returns the expectations of key met by a reconcile starting now: it waits for those not
// armed yet, then evaluates their conditions. It runs before the start is recorded, so a reconcile
// recorded as meeting an expectation started after its condition held.
func (r *Reconciles) checkStart(ctx context.Context, key client.ObjectKey) []*expectation {
	r.mu.Lock()
	var open []*expectation
	for _, e := range r.expected[key] {
		if e.first == 0 {
			open = append(open, e)
			if !e.armed {
				e.waiting++
			}
		}
	}
	r.mu.Unlock()
	var met []*expectation
	for _, e := range open {
		select {
		case <-e.ready:
		case <-ctx.Done():
			continue
		}
		if e.cond != nil && e.cond(ctx) {
			met = append(met, e)
		}
	}
	return met
}

// met returns the first finished reconcile that met e.
func (r *Reconciles) met(e *expectation) (Reconcile, bool) {
	r.mu.Lock()
	first := e.first
	r.mu.Unlock()
	if first == 0 {
		return Reconcile{}, false
	}
	return r.finishedFrom(e.key, first)
}

// describe renders reconciles for failure messages.
func describe(recs []Reconcile) string {
	if len(recs) == 0 {
		return "none"
	}
	lines := make([]string, len(recs))
	for i, rec := range recs {
		lines[i] = "\n  " + rec.String()
	}
	return strings.Join(lines, "")
}
