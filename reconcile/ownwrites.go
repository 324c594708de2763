package reconcile

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ownWrites lets a reconcile read the Reconciler's own writes to T before the cache shows them.
//
// After a reconcile writes T (the finalizer, the status), the manager's cache shows the old version
// until the watch event arrives. A child's event can start the next reconcile of T before that; from
// the old version it would add the finalizer again and patch the status with a stale resourceVersion
// (a 409, a re-read, a retry). So after every write to T the Reconciler records what the server
// answered, and the resourceVersions that answer supersedes; a cache read that returns a superseded
// version is replaced by the recorded object. Any other version (the write itself, or a later one by
// someone else) means the cache has caught up, and the record is dropped. Safe for concurrent use.
type ownWrites[T Object] struct {
	mu sync.Mutex
	m  map[types.UID]*ownWrite[T]
}

// ownWrite is what the last write to one object returned, and the versions it supersedes.
type ownWrite[T Object] struct {
	latest     T
	superseded map[string]bool
}

// maxOwnWrites bounds the records: one per object written whose watch event has not arrived yet.
// Past it they are all dropped; that costs at most a conflict each, never correctness.
const maxOwnWrites = 10000

func newOwnWrites[T Object]() *ownWrites[T] {
	return &ownWrites[T]{m: map[types.UID]*ownWrite[T]{}}
}

// resolve returns the object to reconcile for cached: a copy of our last write when cached is a version
// that write superseded, else cached itself.
func (w *ownWrites[T]) resolve(cached T) T {
	w.mu.Lock()
	defer w.mu.Unlock()
	rec := w.m[cached.GetUID()]
	if rec == nil {
		return cached
	}
	if rec.superseded[cached.GetResourceVersion()] {
		if c, ok := rec.latest.DeepCopyObject().(T); ok {
			return c
		}
	}
	delete(w.m, cached.GetUID())
	return cached
}

// wrote records that a write turned the version rvBefore into after.
func (w *ownWrites[T]) wrote(rvBefore string, after T) {
	if rvBefore == "" || after.GetUID() == "" || rvBefore == after.GetResourceVersion() {
		return
	}
	latest, ok := after.DeepCopyObject().(T)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	rec := w.m[after.GetUID()]
	if rec == nil {
		if len(w.m) >= maxOwnWrites {
			clear(w.m)
		}
		rec = &ownWrite[T]{superseded: map[string]bool{}}
		w.m[after.GetUID()] = rec
	}
	rec.superseded[rvBefore] = true
	rec.latest = latest
}

// observe drops the record of obj once the cache holds a version our writes did not supersede.
func (w *ownWrites[T]) observe(obj client.Object) {
	if obj == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if rec := w.m[obj.GetUID()]; rec != nil && !rec.superseded[obj.GetResourceVersion()] {
		delete(w.m, obj.GetUID())
	}
}

// forget drops the record of an object that is gone.
func (w *ownWrites[T]) forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, uid)
}

// len returns how many objects have a record.
func (w *ownWrites[T]) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m)
}

// observer is an event handler for T's informer that never enqueues: it only tells w which versions
// the cache holds, so records are dropped as soon as they are no longer needed.
func (w *ownWrites[T]) observer() handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]
	return handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ queue) { w.observe(e.ObjectNew) },
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ queue) {
			if e.Object != nil {
				w.forget(e.Object.GetUID())
			}
		},
	}
}
