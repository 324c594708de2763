package apply

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// knowledge is what a controller knows about the objects it writes beyond what its cache shows. The
// cache lags behind the API server and may be filtered, so it is trusted only to say whether an object
// it shows still holds our intent. Where an answer rests on an object's absence or identity, the
// controller asks this record of its own writes, or reads once from the API server.
//
// Per object (kind, namespace, name) it keeps:
//   - the answer to our last write and the resourceVersions that write superseded: a cache that still
//     shows a superseded version has not seen the write yet, so the write is not repeated (and, for
//     the reconciled object itself, the answer is worked on instead of the stale copy);
//   - that we created or updated the object and the cache has not shown it since: a cache miss then
//     does not mean "absent", and is checked with one read;
//   - that our DELETE of a UID was accepted (so it is sent once) and whether the cache showed that
//     UID when we sent it (then a later cache miss is the informer's delete event, not a lag);
//   - that the API server said a UID is gone.
//
// A record is dropped as soon as the cache shows a version our writes did not supersede, when its
// owner is finalized, and when the record grows past maxKnown (the older half goes). Losing a record
// costs at most one read or one repeated request, never an invariant: absence is always confirmed.
// Safe for concurrent use.
type knowledge struct {
	mu  sync.Mutex
	m   map[objectID]*known
	now func() time.Time
	// peak is the most records m held since it was last rebuilt: a Go map keeps the room of its
	// largest size, so m is rebuilt once it holds a quarter of that (see compact).
	peak int
}

// objectID names an object whatever its UID: what a cache miss can name.
type objectID struct {
	gk  schema.GroupKind
	key types.NamespacedName
}

// known is what the controller knows of one object beyond its cache.
type known struct {
	uid   types.UID
	owner types.UID
	// proto is an empty object of the kind (children), to read the object when the cache misses it.
	proto client.Object
	// written: our last write (create or update) of uid has not been seen in the cache yet.
	written bool
	// superseded are the resourceVersions our writes replaced; latest is the answer to the last write
	// (kept only for the reconciled object, see wrote); hash the intent hash that write applied.
	superseded map[string]bool
	latest     client.Object
	hash       string
	// deleting: our DELETE of uid was accepted; seen: the cache showed uid when it was sent.
	deleting, seen bool
	// gone: the API server said uid no longer exists (or the cache saw it go after our DELETE).
	gone bool
	at   time.Time
}

// maxKnown bounds the records: objects written, deleted or confirmed gone whose record is still of use.
const maxKnown = 10000

func newKnowledge() *knowledge {
	return &knowledge{m: map[objectID]*known{}, now: time.Now}
}

func idOf(gk schema.GroupKind, obj client.Object) objectID {
	return objectID{gk: gk, key: client.ObjectKeyFromObject(obj)}
}

// entry returns the record of id, creating it for uid (a record of another UID is replaced).
// Callers hold mu.
func (k *knowledge) entry(id objectID, uid types.UID) *known {
	rec := k.m[id]
	if rec == nil || rec.uid != uid {
		if len(k.m) >= maxKnown {
			k.shrink()
		}
		rec = &known{uid: uid}
		k.m[id] = rec
		k.peak = max(k.peak, len(k.m))
	}
	rec.at = k.now()
	return rec
}

// shrink drops the older half of the records. Callers hold mu.
func (k *knowledge) shrink() {
	times := make([]time.Time, 0, len(k.m))
	for _, r := range k.m {
		times = append(times, r.at)
	}
	slices.SortFunc(times, time.Time.Compare)
	cut := times[len(times)/2]
	for id, r := range k.m {
		if !r.at.After(cut) {
			delete(k.m, id)
		}
	}
}

// wrote records that our write turned the version rvBefore (empty for a create) into after, applying
// hash (empty for writes that are not applies). keep keeps a copy of after, for callers that work on it
// while the cache lags (the reconciled object); children keep only versions and hash. A write that
// changed nothing on the server (the same version) is not recorded.
func (k *knowledge) wrote(id objectID, owner types.UID, proto client.Object, rvBefore string, after client.Object, hash string, keep bool) {
	if after == nil || rvBefore == after.GetResourceVersion() {
		return
	}
	k.record(id, owner, proto, rvBefore, after, hash, keep)
}

// finalized records that our removal of the reconciled object's finalizer answered after. The API
// server deletes an object whose last finalizer goes and answers with its last version, which may carry
// rvBefore, so unlike wrote this records even an unchanged version: a cache still showing the object
// with the finalizer is then worked on as after (nothing left to do), not sent the removal again.
func (k *knowledge) finalized(id objectID, rvBefore string, after client.Object) {
	k.record(id, "", nil, rvBefore, after, "", true)
}

// record is wrote without its checks.
func (k *knowledge) record(id objectID, owner types.UID, proto client.Object, rvBefore string, after client.Object, hash string, keep bool) {
	var latest client.Object
	if keep {
		latest, _ = after.DeepCopyObject().(client.Object)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	rec := k.entry(id, after.GetUID())
	rec.owner, rec.proto = owner, proto
	rec.written, rec.latest, rec.hash = true, latest, hash
	rec.deleting, rec.seen, rec.gone = false, false, false
	if rec.superseded == nil {
		rec.superseded = map[string]bool{}
	}
	if rvBefore != "" {
		rec.superseded[rvBefore] = true
	}
}

// caughtUp drops the write part of rec: the cache shows a version our writes did not supersede.
// Callers hold mu.
func (k *knowledge) caughtUp(id objectID, rec *known) {
	rec.written, rec.superseded, rec.latest, rec.hash = false, nil, nil, ""
	if !rec.deleting && !rec.gone {
		delete(k.m, id)
		k.compact()
	}
}

// compact rebuilds m once it holds a quarter of its peak, giving back the room of the records dropped
// since (after a burst of writes, such as every object converging at start). Callers hold mu.
func (k *knowledge) compact() {
	if k.peak < 64 || len(k.m) > k.peak/4 {
		return
	}
	m := make(map[objectID]*known, len(k.m))
	maps.Copy(m, k.m)
	k.m, k.peak = m, len(m)
}

// lagging reports whether cached is a version our last write (of intent hash) superseded: the cache
// has not seen that write yet. Any other version of the same UID means the cache caught up.
func (k *knowledge) lagging(id objectID, cached client.Object, hash string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec := k.m[id]
	if rec == nil || !rec.written {
		return false
	}
	if rec.uid != cached.GetUID() {
		return false // the cache still shows what held the name before our write
	}
	if rec.superseded[cached.GetResourceVersion()] {
		return rec.hash == hash
	}
	k.caughtUp(id, rec)
	return false
}

// resolve returns what to work on for the cached object: a copy of the answer to our last write when
// cached is a version that write superseded, else cached (and the record of the write is dropped).
func (k *knowledge) resolve(id objectID, cached client.Object) client.Object {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec := k.m[id]
	if rec == nil || !rec.written {
		return cached
	}
	if rec.uid == cached.GetUID() && rec.superseded[cached.GetResourceVersion()] && rec.latest != nil {
		if c, ok := rec.latest.DeepCopyObject().(client.Object); ok {
			return c
		}
	}
	k.caughtUp(id, rec)
	return cached
}

// unseenWrite reports whether we wrote id and the cache has not shown that write: a cache miss for it
// says nothing about its absence.
func (k *knowledge) unseenWrite(id objectID) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec := k.m[id]
	return rec != nil && rec.written
}

// sentDelete records that the API server accepted our DELETE of uid; seen says whether the cache
// showed uid when it was sent.
func (k *knowledge) sentDelete(id objectID, owner types.UID, proto client.Object, uid types.UID, seen bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec := k.entry(id, uid)
	rec.owner, rec.proto = owner, proto
	rec.written, rec.superseded, rec.latest, rec.hash = false, nil, nil, ""
	rec.deleting, rec.seen = true, seen
}

// deleteSent reports whether our DELETE of uid at id was accepted.
func (k *knowledge) deleteSent(id objectID, uid types.UID) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec := k.m[id]
	return rec != nil && rec.uid == uid && (rec.deleting || rec.gone)
}

// goneByCache reports, for an id the cache does not show, whether that absence is known to be true:
// the API server said so before, or the cache showed the UID we deleted and no longer does (its
// informer received the deletion).
func (k *knowledge) goneByCache(id objectID) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec := k.m[id]
	switch {
	case rec == nil:
		return false
	case rec.gone:
		return true
	case rec.deleting && rec.seen:
		rec.gone = true
		return true
	}
	return false
}

// isGone reports whether the API server said uid at id is gone.
func (k *knowledge) isGone(id objectID, uid types.UID) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec := k.m[id]
	return rec != nil && rec.uid == uid && rec.gone
}

// confirmGone records that the API server said id (uid, or whatever held the name), a child of owner,
// is gone.
func (k *knowledge) confirmGone(id objectID, owner, uid types.UID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec := k.m[id]
	if rec == nil || uid != "" && rec.uid != uid {
		rec = k.entry(id, uid)
		rec.owner = owner
	}
	rec.written, rec.superseded, rec.latest, rec.hash = false, nil, nil, ""
	rec.deleting, rec.gone = false, true
}

// pending is a child the record knows of and the cache may not show.
type pending struct {
	id    objectID
	proto client.Object
}

// unsettled returns the children of owner that we wrote or deleted and that are not known to be gone.
func (k *knowledge) unsettled(owner types.UID) []pending {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []pending
	for id, rec := range k.m {
		if rec.owner == owner && owner != "" && !rec.gone && rec.proto != nil && (rec.written || rec.deleting) {
			out = append(out, pending{id: id, proto: rec.proto})
		}
	}
	return out
}

// forgetChildren drops the records of owner's children: the owner is finalized. (Its own record
// stays until its informer sees it go, see observer.)
func (k *knowledge) forgetChildren(owner types.UID) {
	if owner == "" {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for id, rec := range k.m {
		if rec.owner == owner {
			delete(k.m, id)
		}
	}
	k.compact()
}

// observe drops the record of the write to obj once the cache shows a version it did not supersede.
func (k *knowledge) observe(id objectID, obj client.Object) {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec := k.m[id]
	if rec != nil && rec.written && (rec.uid != obj.GetUID() || !rec.superseded[obj.GetResourceVersion()]) {
		k.caughtUp(id, rec)
	}
}

// forget drops the record of id when it is about uid.
func (k *knowledge) forget(id objectID, uid types.UID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if rec := k.m[id]; rec != nil && rec.uid == uid {
		delete(k.m, id)
		k.compact()
	}
}

// len returns how many objects have a record.
func (k *knowledge) len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.m)
}

// observer is an event handler for the reconciled kind's informer that never enqueues: it tells the
// record which versions the cache holds, so records are dropped as soon as they are of no use.
func (k *knowledge) observer(gk schema.GroupKind) handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]
	return handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ queue) {
			if e.ObjectNew != nil {
				k.observe(idOf(gk, e.ObjectNew), e.ObjectNew)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ queue) {
			if e.Object != nil {
				k.forget(idOf(gk, e.Object), e.Object.GetUID())
			}
		},
	}
}
