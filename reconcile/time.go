package reconcile

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/convergo-dev/convergo/status"
)

// RequeueAfter asks, from a hook (Children, Status, Cleanup, Failed), that the object be reconciled
// again after d at the latest, for what no watch event announces: a certificate that expires, an
// external system polled, a Job running to completion. Several asks keep the earliest. On the failure
// path too (Hooks.Failed can say when to look again): a reconcile that fails with a transient error
// after an ask is looked at again after d instead of with controller-runtime's backoff; its error is
// logged, counted in Convergo's metrics and written in the status as on any failure, and Reconcile
// returns no error (controller-runtime ignores a result returned with one). A terminal error is never
// retried. Outside a Reconciler's reconcile it does nothing.
//
//	reconcile.RequeueAfter(ctx, time.Until(cert.NotAfter.Add(-30*24*time.Hour)))
func RequeueAfter(ctx context.Context, d time.Duration) { askAfter(ctx, d, triggerRequeue) }

// askAfter is RequeueAfter, with why the object is to be looked at again (a trigger).
func askAfter(ctx context.Context, d time.Duration, why string) {
	if ask, ok := ctx.Value(requeueKey{}).(*requeueAsk); ok && d > 0 {
		ask.mu.Lock()
		if ask.after == 0 || d < ask.after {
			ask.after, ask.why = d, why
		}
		ask.mu.Unlock()
	}
}

// later returns a Result that looks at the object again after d, and records why for the trigger of
// that reconcile.
func later(ctx context.Context, d time.Duration, why string) ctrl.Result {
	if ask, ok := ctx.Value(requeueKey{}).(*requeueAsk); ok && d > 0 {
		ask.mu.Lock()
		ask.resultWhy = why
		ask.mu.Unlock()
	}
	return ctrl.Result{RequeueAfter: d}
}

// WithInterval makes the Reconciler look at every object again at most d after its last reconcile,
// jittered by up to a tenth of d so that objects reconciled together spread out (JOSDK's
// maxReconciliationInterval, Flux's spec.interval): for drift that produces no watch event. Without it,
// only watch events and RequeueAfter bring an object back. A converged object then costs one reconcile
// per interval, which reads the cache only.
func WithInterval(d time.Duration) ReconcilerOption {
	return func(c *reconcilerConfig) { c.interval = d }
}

// requeueKey is the context key of a reconcile's requeueAsk.
type requeueKey struct{}

// requeueAsk is the earliest RequeueAfter the hooks of one reconcile asked for, and why (a trigger);
// resultWhy is why the reconcile's own Result looks again (later).
type requeueAsk struct {
	mu        sync.Mutex
	after     time.Duration
	why       string
	resultWhy string
}

// withRequeue returns ctx carrying a new requeueAsk, and the ask.
func withRequeue(ctx context.Context) (context.Context, *requeueAsk) {
	ask := &requeueAsk{}
	return context.WithValue(ctx, requeueKey{}, ask), ask
}

// earliest returns res with its RequeueAfter brought forward to the ask's, when the ask is earlier,
// and why it looks again (empty when it does not).
func (a *requeueAsk) earliest(res ctrl.Result) (ctrl.Result, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.after > 0 && (res.RequeueAfter == 0 || a.after < res.RequeueAfter) {
		return ctrl.Result{RequeueAfter: a.after}, a.why
	}
	if res.RequeueAfter > 0 {
		return res, a.resultWhy
	}
	return res, ""
}

// onFailure is what Reconcile returns for a reconcile that failed with err: err, retried with
// backoff (or not at all, when terminal), unless a hook asked for a time, which then replaces the
// backoff.
func (a *requeueAsk) onFailure(ctx context.Context, err error) (ctrl.Result, error) {
	a.mu.Lock()
	d := a.after
	a.mu.Unlock()
	if d == 0 || errors.Is(err, ctrlreconcile.TerminalError(nil)) {
		return ctrl.Result{}, err
	}
	a.mu.Lock()
	a.resultWhy = a.why
	a.mu.Unlock()
	loggerOf(ctx).Error(err, "Reconciler error; looking again when a hook asked", "requeueAfter", d)
	return ctrl.Result{RequeueAfter: d}, nil
}

// nextLook returns when a reconciled object is looked at again under WithInterval (0 without it).
func (r *Reconciler[T]) nextLook() time.Duration {
	if r.interval <= 0 {
		return 0
	}
	return jitter(r.interval)
}

// jitter returns d shortened by up to a tenth, at random, so that objects looked at together spread
// out; 0 stays 0.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d - time.Duration(rand.Int64N(int64(d)/10+1))
}

// WithConditions makes conditions the hooks set (in Status or Failed) feed Ready, as declared in s:
// s.Conditions are True when good, s.NegativePolarity True when bad (Degraded). After the children's
// outcome sets Ready / Reconciling / Stalled, Ready is derived as status.Summarize does: Stalled first,
// then the first of the author's conditions that is not good (Ready=False, or Unknown for one not
// reported yet or observed at an older generation, with its reason and "<Type>: <message>"), then
// Reconciling; Ready=True only when all are good. s.Reason and s.Message are replaced by the
// Reconciler's own.
//
//	reconcile.WithConditions(status.Summary{Conditions: []string{"CredentialsValid"}, NegativePolarity: []string{"Degraded"}})
func WithConditions(s status.Summary) ReconcilerOption {
	return func(c *reconcilerConfig) { c.summary = &s }
}
