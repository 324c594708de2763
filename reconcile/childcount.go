package reconcile

import (
	"context"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/convergo-dev/convergo/ownership"
)

// childCounts counts, per owner UID and child kind, the objects of the cache that carry the owner's
// UID tracking label: what a prune's list of that kind (by that label, on the cache) would return.
// It is kept from the child events of the kinds it is given a handler for, before the events wake
// the owners, so a reconcile woken by an event finds it counted. A prune lists a kind only when the
// count says an object other than the declared children may be there (see mayHoldUndeclared): the
// list scans every cached object of the kind, which over a restart or a resync of N owners is N^2
// label checks, while a count costs a few bytes per owner. Safe for concurrent use.
type childCounts struct {
	mu sync.Mutex
	// kinds are the counted kinds; an owner's counts are in their order.
	kinds []schema.GroupKind
	// byOwner holds the counts of the owners with at least one counted object.
	byOwner map[types.UID][]int32
}

func newChildCounts() *childCounts {
	return &childCounts{byOwner: map[types.UID][]int32{}}
}

// handler returns next, counting the events of kind gk first.
func (c *childCounts) handler(gk schema.GroupKind, next handler.EventHandler) handler.EventHandler {
	c.mu.Lock()
	i := slices.Index(c.kinds, gk)
	if i < 0 {
		i = len(c.kinds)
		c.kinds = append(c.kinds, gk)
	}
	c.mu.Unlock()
	return countingHandler{counts: c, kind: i, next: next}
}

// add changes the count of kind i for the owner obj's tracking label names (if any) by delta.
func (c *childCounts) add(obj client.Object, i int, delta int32) {
	if obj == nil {
		return
	}
	uid := types.UID(obj.GetLabels()[ownership.OwnerUIDLabel])
	if uid == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.byOwner[uid]
	if len(n) < len(c.kinds) {
		n = append(n, make([]int32, len(c.kinds)-len(n))...)
	}
	n[i] += delta
	if slices.ContainsFunc(n, func(v int32) bool { return v != 0 }) {
		c.byOwner[uid] = n
	} else {
		delete(c.byOwner, uid)
	}
}

// mayHoldUndeclared reports whether the cache may hold an object of kind gk tracked by owner other than
// its declared children of that kind: when gk is not counted, or when the cache holds more of them
// than declared. A declared child the cache does not show yet (created by this reconcile) leaves room
// for an undeclared one to go unseen; its creation event wakes the owner again, and that reconcile
// counts it. Callers that know of such a child list anyway.
func (c *childCounts) mayHoldUndeclared(owner types.UID, gk schema.GroupKind, declared int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.kinds, gk)
	if i < 0 {
		return true
	}
	n := c.byOwner[owner]
	return i < len(n) && int(n[i]) > declared
}

// countingHandler counts the events of one kind, then passes them on.
type countingHandler struct {
	counts *childCounts
	kind   int
	next   handler.EventHandler
}

func (h countingHandler) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
	h.counts.add(e.Object, h.kind, 1)
	h.next.Create(ctx, e, q)
}

func (h countingHandler) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
	if e.ObjectOld != nil && e.ObjectNew != nil &&
		e.ObjectOld.GetLabels()[ownership.OwnerUIDLabel] != e.ObjectNew.GetLabels()[ownership.OwnerUIDLabel] {
		h.counts.add(e.ObjectOld, h.kind, -1)
		h.counts.add(e.ObjectNew, h.kind, 1)
	}
	h.next.Update(ctx, e, q)
}

func (h countingHandler) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
	h.counts.add(e.Object, h.kind, -1)
	h.next.Delete(ctx, e, q)
}

func (h countingHandler) Generic(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
	h.next.Generic(ctx, e, q)
}
