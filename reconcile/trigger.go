package reconcile

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/convergo-dev/convergo/internal/kobj"
)

// Why a reconcile ran: its span's convergo.trigger, its log line's "trigger" and the trigger label of
// convergo_reconcile_triggers_total.
const (
	triggerStartup  = "start-up" // the object was listed when the controller started
	triggerCreated  = "created"  // the object was created
	triggerChanged  = "changed"  // its spec, labels or annotations changed, or its deletion began
	triggerChild    = "child"    // one of its children changed (the detail names it)
	triggerWatch    = "watch"    // a WithWatches watch mapped an object to it (the detail names it)
	triggerShard    = "shard"    // sharding moved it (a take-over or a hand-over)
	triggerRequeue  = "requeue"  // a hook asked (RequeueAfter)
	triggerExternal = "external" // an external node was due for observation
	triggerInterval = "interval" // WithInterval
	triggerPoll     = "poll"     // a deletion waited for something that sends no event
	triggerRetry    = "retry"    // the last reconcile failed
	triggerUnknown  = "unknown"  // none of these was seen (another controller's queue, a test)
)

// trigger is why a reconcile ran, and, for a child or a watch, which object.
type trigger struct{ why, detail string }

// triggers remembers, per object, why it was queued: the first event since its last reconcile
// began, else what that reconcile asked for (a requeue, an interval, a retry).
type triggers struct {
	mu      sync.Mutex
	started time.Time
	queued  map[types.NamespacedName]trigger
	after   map[types.NamespacedName]trigger
}

func newTriggers() *triggers {
	return &triggers{started: time.Now(), queued: map[types.NamespacedName]trigger{}, after: map[types.NamespacedName]trigger{}}
}

// note records that an event queued key, unless an earlier one did since its last reconcile began.
func (t *triggers) note(key types.NamespacedName, tr trigger) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.queued[key]; !ok {
		t.queued[key] = tr
	}
}

// requeued records why the reconcile of key that just ended asked to run again.
func (t *triggers) requeued(key types.NamespacedName, why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.after[key] = trigger{why: why}
}

// take returns why key's reconcile, beginning now, runs, and forgets it.
func (t *triggers) take(key types.NamespacedName) trigger {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr, ok := t.queued[key]
	if !ok {
		if tr, ok = t.after[key]; !ok {
			tr = trigger{why: triggerUnknown}
		}
	}
	delete(t.queued, key)
	delete(t.after, key)
	return tr
}

// ownEvents is the predicate, last of T's, that notes why an event of T queues it.
func (t *triggers) ownEvents() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			// Creation times have seconds only: one in the second the controller started reads as
			// created.
			why := triggerCreated
			if e.Object.GetCreationTimestamp().Time.Before(t.started.Truncate(time.Second)) {
				why = triggerStartup
			}
			t.note(client.ObjectKeyFromObject(e.Object), trigger{why: why})
			return true
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			t.note(client.ObjectKeyFromObject(e.ObjectNew), trigger{why: triggerChanged})
			return true
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return true },
	}
}

// noting wraps h so that each object it queues is noted with why and, when kind is not empty, the
// event's object, of that kind.
func (t *triggers) noting(why, kind string, h handler.EventHandler) handler.EventHandler {
	q := func(q workqueue.TypedRateLimitingInterface[ctrl.Request], obj client.Object) workqueue.TypedRateLimitingInterface[ctrl.Request] {
		tr := trigger{why: why}
		if kind != "" {
			tr.detail = kobj.DescribeKey(kind, client.ObjectKeyFromObject(obj))
		}
		return notingQueue{TypedRateLimitingInterface: q, note: func(req ctrl.Request) { t.note(req.NamespacedName, tr) }}
	}
	return handler.TypedFuncs[client.Object, ctrl.Request]{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, wq workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			h.Create(ctx, e, q(wq, e.Object))
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, wq workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			h.Update(ctx, e, q(wq, e.ObjectNew))
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, wq workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			h.Delete(ctx, e, q(wq, e.Object))
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, wq workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			h.Generic(ctx, e, q(wq, e.Object))
		},
	}
}

// notingQueue notes every request added to the queue it wraps.
type notingQueue struct {
	workqueue.TypedRateLimitingInterface[ctrl.Request]
	note func(ctrl.Request)
}

func (q notingQueue) Add(req ctrl.Request) {
	q.note(req)
	q.TypedRateLimitingInterface.Add(req)
}

func (q notingQueue) AddAfter(req ctrl.Request, d time.Duration) {
	q.note(req)
	q.TypedRateLimitingInterface.AddAfter(req, d)
}

func (q notingQueue) AddRateLimited(req ctrl.Request) {
	q.note(req)
	q.TypedRateLimitingInterface.AddRateLimited(req)
}
