package reconcile

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/convergo-dev/convergo/ownership"
)

// WithEveryChildChange makes every update of a child wake its owner, as controller-runtime's Owns
// does, instead of only the updates that may matter to it (the default): a change of what the owner
// applied, or a status change that changes the verdict of the child's ReadyWhen check. Use it when
// the Status hook copies child status fields that ReadyWhen does not look at (e.g. a Deployment's
// readyReplicas) and the owner's status must follow each of their changes, not only the last one
// before a readiness change; it costs a reconcile per child status update.
func WithEveryChildChange() ReconcilerOption {
	return func(c *reconcilerConfig) { c.everyChildChange = true }
}

// maxVerdicts bounds the readiness verdicts a childWatch remembers. Losing one costs at most one
// reconcile: a child without a remembered verdict wakes its owner.
const maxVerdicts = 10000

// childWatch decides which events of a child wake its owner. Create, delete and generic events always
// do; an update does when
//
//   - something the owner applied may have changed: anything but the status, resourceVersion and
//     managedFields (for objects with metadata.generation that covers a generation change, and for
//     every object labels, annotations, owner references, finalizers and the deletion timestamp), or
//   - the readiness the owner reads may have changed: the ReadyWhen check of the owner's last reconcile
//     gives the new object another verdict (ready, reason) than the one that reconcile saw. A child
//     without a remembered verdict (first events, after a restart, one the owner did not judge) wakes
//     its owner; a node without ReadyWhen is ready once it exists, so its status never does;
//
// and also, whatever changed, while the owner is being reconciled (that reconcile may have judged an
// older version of the child than this event's: the owner is reconciled again after it) and for a
// resync (the same resourceVersion, passed on as controller-runtime does). Safe for concurrent use.
type childWatch struct {
	owner schema.GroupKind
	every bool

	mu sync.Mutex
	// verdicts holds, by child UID, the check of the owner's last reconcile and its verdict then.
	verdicts map[types.UID]verdict
	// busy counts, by owner, the reconciles running.
	busy map[types.NamespacedName]int
}

// verdict is a child's readiness as the owner's last reconcile judged it.
type verdict struct {
	// check is the node's ReadyWhen; nil for a node without one (ready once it exists).
	check  ReadyCheck
	ready  bool
	reason string
}

func newChildWatch(owner schema.GroupKind, every bool) *childWatch {
	return &childWatch{owner: owner, every: every, verdicts: map[types.UID]verdict{}, busy: map[types.NamespacedName]int{}}
}

// handler wraps inner, the handler of child events, with the update filter.
func (w *childWatch) handler(inner handler.EventHandler) handler.EventHandler {
	return quietChildren{w: w, inner: inner}
}

// reconciling records that a reconcile of the owner key starts; the returned function records its end.
func (w *childWatch) reconciling(key types.NamespacedName) (done func()) {
	w.mu.Lock()
	w.busy[key]++
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.busy[key]--; w.busy[key] <= 0 {
			delete(w.busy, key)
		}
	}
}

// remember records, for every child the reconcile applied, the check of its node and its verdict on
// the object the reconcile judged. A check that panics is not remembered (its child wakes the owner).
func (w *childWatch) remember(g *Graph, res *GraphResult) {
	if w.every || g == nil || res == nil {
		return
	}
	for _, c := range res.Children {
		n := g.index[c.Name]
		if !c.Applied || n == nil || isNilObject(c.Object) || c.Object.GetUID() == "" {
			continue
		}
		v := verdict{check: n.ready, ready: true}
		ok := true
		if n.ready != nil {
			v.ready, v.reason, ok = judge(n.ready, c.Object)
		}
		w.mu.Lock()
		if !ok {
			delete(w.verdicts, c.Object.GetUID())
		} else {
			if _, exists := w.verdicts[c.Object.GetUID()]; !exists && len(w.verdicts) >= maxVerdicts {
				w.shrink()
			}
			w.verdicts[c.Object.GetUID()] = v
		}
		w.mu.Unlock()
	}
}

// shrink drops half of the verdicts (any half: a lost verdict only wakes an owner). Callers hold mu.
func (w *childWatch) shrink() {
	drop := len(w.verdicts) / 2
	for uid := range w.verdicts {
		if drop == 0 {
			return
		}
		delete(w.verdicts, uid)
		drop--
	}
}

// forget drops the verdict of a deleted child.
func (w *childWatch) forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.verdicts, uid)
}

// remembered returns how many verdicts are remembered.
func (w *childWatch) remembered() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.verdicts)
}

// wakes reports whether the update of a child from old to new wakes its owner (see childWatch).
func (w *childWatch) wakes(old, new client.Object) bool {
	if w.every || isNilObject(old) || isNilObject(new) || old.GetUID() != new.GetUID() ||
		old.GetResourceVersion() == new.GetResourceVersion() || appliedChanged(old, new) {
		return true
	}
	w.mu.Lock()
	busy := w.ownerBusy(old) || w.ownerBusy(new)
	v, known := w.verdicts[new.GetUID()]
	w.mu.Unlock()
	switch {
	case busy || !known:
		return true
	case v.check == nil:
		return false
	}
	ready, reason, ok := judge(v.check, new)
	return !ok || ready != v.ready || reason != v.reason
}

// ownerBusy reports whether the owner child's tracking labels name, if of the watch's owner kind, is
// being reconciled; a child that names no such owner counts as busy (the inner handler decides).
// Callers hold mu.
func (w *childWatch) ownerBusy(child client.Object) bool {
	ref, ok := ownership.TrackedOwner(child)
	if !ok || ref.Group != w.owner.Group || ref.Kind != w.owner.Kind {
		return true
	}
	return w.busy[types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}] > 0
}

// judge runs check on live as Graph.Apply does (a ready child has no reason, a child not ready
// without one is "not ready"); ok is false when the check panicked.
func judge(check ReadyCheck, live client.Object) (ready bool, reason string, ok bool) {
	defer func() {
		if recover() != nil {
			ready, reason, ok = false, "", false
		}
	}()
	ready, reason = check(live)
	switch {
	case ready:
		reason = ""
	case reason == "":
		reason = "not ready"
	}
	return ready, reason, true
}

// appliedChanged reports whether an update of a child may have changed something its owner applied:
// anything outside the status, metadata.resourceVersion and metadata.managedFields. Objects whose
// content it cannot compare (neither structs nor unstructured, or of two types) count as changed.
func appliedChanged(old, new client.Object) bool {
	return metadataChanged(old, new) || contentChanged(old, new)
}

// metadataChanged compares the metadata a write can change, but for resourceVersion and managedFields.
func metadataChanged(a, b client.Object) bool {
	return a.GetGeneration() != b.GetGeneration() ||
		!maps.Equal(a.GetLabels(), b.GetLabels()) ||
		!maps.Equal(a.GetAnnotations(), b.GetAnnotations()) ||
		!equality.Semantic.DeepEqual(a.GetOwnerReferences(), b.GetOwnerReferences()) ||
		!slices.Equal(a.GetFinalizers(), b.GetFinalizers()) ||
		!a.GetDeletionTimestamp().Equal(b.GetDeletionTimestamp()) ||
		!equality.Semantic.DeepEqual(a.GetDeletionGracePeriodSeconds(), b.GetDeletionGracePeriodSeconds())
}

// skippedFields are the top-level fields contentChanged does not compare: the type (which cannot
// change), the metadata (metadataChanged) and the status.
var skippedFields = map[string]bool{"apiVersion": true, "kind": true, "metadata": true, "status": true}

// typeMeta is the type of the inline TypeMeta of typed objects.
var typeMeta = reflect.TypeFor[metav1.TypeMeta]()

// contentChanged compares every top-level field but the type, metadata and status: the spec, and what
// objects without one hold at the top level (a ConfigMap's data, a Role's rules, ...).
func contentChanged(old, new client.Object) bool {
	if uo, ok := old.(*unstructured.Unstructured); ok {
		un, ok := new.(*unstructured.Unstructured)
		if !ok {
			return true
		}
		for _, content := range []map[string]any{uo.Object, un.Object} {
			for k := range content {
				if !skippedFields[k] && !equality.Semantic.DeepEqual(uo.Object[k], un.Object[k]) {
					return true
				}
			}
		}
		return false
	}
	vo, vn := reflect.ValueOf(old), reflect.ValueOf(new)
	if vo.Type() != vn.Type() || vo.Kind() != reflect.Pointer || vo.Elem().Kind() != reflect.Struct {
		return true
	}
	vo, vn = vo.Elem(), vn.Elem()
	for i := range vo.NumField() {
		f := vo.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || f.Type == typeMeta || skippedFields[name] || name == "-" {
			continue // not serialized, or not compared
		}
		if !equality.Semantic.DeepEqual(vo.Field(i).Interface(), vn.Field(i).Interface()) {
			return true
		}
	}
	return false
}

// isNilObject reports whether obj is nil or a nil pointer.
func isNilObject(obj client.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// quietChildren is the event handler of child watches: inner (the mapping to owners) for the events
// the childWatch lets through.
type quietChildren struct {
	w     *childWatch
	inner handler.EventHandler
}

type requestQueue = workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]

// Create always wakes the owner.
func (h quietChildren) Create(ctx context.Context, e event.CreateEvent, q requestQueue) {
	h.inner.Create(ctx, e, q)
}

// Update wakes the owner when the childWatch says so.
func (h quietChildren) Update(ctx context.Context, e event.UpdateEvent, q requestQueue) {
	if h.w.wakes(e.ObjectOld, e.ObjectNew) {
		h.inner.Update(ctx, e, q)
	}
}

// Delete forgets the child's verdict and always wakes the owner.
func (h quietChildren) Delete(ctx context.Context, e event.DeleteEvent, q requestQueue) {
	if !isNilObject(e.Object) {
		h.w.forget(e.Object.GetUID())
	}
	h.inner.Delete(ctx, e, q)
}

// Generic always wakes the owner.
func (h quietChildren) Generic(ctx context.Context, e event.GenericEvent, q requestQueue) {
	h.inner.Generic(ctx, e, q)
}
