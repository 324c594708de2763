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
	"github.com/convergo-dev/convergo/reconcile/graph"
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
// unless the new object is the very version the owner's last reconcile judged (the answer to its own
// write to the child: nothing the owner has not seen). A resync (the same resourceVersion) is passed on
// as controller-runtime does. An update that comes while the owner is being reconciled is held until
// that reconcile has remembered what it judged, and then decided as above against that (so it wakes
// the owner when the reconcile judged an older version of the child and the difference matters);
// held updates are passed on when a reconcile ends without judging the children. Safe for concurrent
// use.
type childWatch struct {
	owner schema.GroupKind
	every bool

	mu sync.Mutex
	// verdicts holds, by child UID, the check of the owner's last reconcile and its verdict then, for
	// the children of nodes with ReadyWhen; judged holds the resourceVersion judged of the others
	// (ready once they exist), which is all their verdict says. Most children have no check, and
	// the two maps keep each verdict at its size.
	verdicts map[types.UID]verdict
	judged   map[types.UID]string
	// busy holds the owners whose reconciles are judging their children, with the updates held.
	busy map[types.NamespacedName]*judgingOwner
}

// verdict is a child's readiness as the owner's last reconcile judged it.
type verdict struct {
	// check is the node's ReadyWhen; nil for a node without one (ready once it exists).
	check graph.ReadyCheck
	// reason is why the child was not ready; "" when it was (see judge).
	reason string
	// rv is the resourceVersion of the object judged (often the answer to the reconcile's own write).
	rv string
}

// lookup returns the verdict remembered for the child uid. Callers hold mu.
func (w *childWatch) lookup(uid types.UID) (verdict, bool) {
	if v, ok := w.verdicts[uid]; ok {
		return v, true
	}
	rv, ok := w.judged[uid]
	return verdict{rv: rv}, ok
}

// set remembers v for the child uid. Callers hold mu.
func (w *childWatch) set(uid types.UID, v verdict) {
	if _, ok := w.lookup(uid); !ok && w.count() >= maxVerdicts {
		w.shrink()
	}
	if v.check == nil {
		delete(w.verdicts, uid)
		w.judged[uid] = v.rv
		return
	}
	delete(w.judged, uid)
	w.verdicts[uid] = v
}

// drop forgets the verdict of the child uid. Callers hold mu.
func (w *childWatch) drop(uid types.UID) {
	delete(w.verdicts, uid)
	delete(w.judged, uid)
}

// count is how many verdicts are remembered. Callers hold mu.
func (w *childWatch) count() int { return len(w.verdicts) + len(w.judged) }

// judgingOwner is an owner whose reconciles are judging its children.
type judgingOwner struct {
	// running counts those reconciles; unjudged is set when one of them ended without remembering.
	running  int
	unjudged bool
	held     []heldUpdate
}

// heldUpdate is an update of a child held until its owner's reconcile has remembered its verdicts.
type heldUpdate struct {
	old, new client.Object
	pass     func()
}

func newChildWatch(owner schema.GroupKind, every bool) *childWatch {
	return &childWatch{owner: owner, every: every, verdicts: map[types.UID]verdict{}, judged: map[types.UID]string{}, busy: map[types.NamespacedName]*judgingOwner{}}
}

// handler wraps inner, the handler of child events, with the update filter.
func (w *childWatch) handler(inner handler.EventHandler) handler.EventHandler {
	return quietChildren{w: w, inner: inner}
}

// judging is one reconcile of an owner, from its start until it has remembered what it judged of the
// children (or ended without judging them).
type judging struct {
	w    *childWatch
	key  types.NamespacedName
	once sync.Once
}

// judge records that a reconcile of the owner key starts: until it ends, updates of its children are
// held.
func (w *childWatch) judge(key types.NamespacedName) *judging {
	w.mu.Lock()
	defer w.mu.Unlock()
	o := w.busy[key]
	if o == nil {
		o = &judgingOwner{}
		w.busy[key] = o
	}
	o.running++
	return &judging{w: w, key: key}
}

// end records that the reconcile ended without remembering verdicts (Reconcile's deferred call: a
// no-op after remember). Only the first end of a judging counts.
func (j *judging) end() { j.finish(false) }

// finish ends j; once the owner's last running reconcile has ended, the updates held meanwhile are
// decided against what it remembered, or all passed on when one of them remembered nothing.
func (j *judging) finish(remembered bool) {
	j.once.Do(func() {
		w := j.w
		w.mu.Lock()
		o := w.busy[j.key]
		o.running--
		o.unjudged = o.unjudged || !remembered
		if o.running > 0 {
			w.mu.Unlock()
			return
		}
		delete(w.busy, j.key)
		held, passAll := o.held, o.unjudged
		verdicts := make([]verdict, len(held))
		known := make([]bool, len(held))
		for i, h := range held {
			verdicts[i], known[i] = w.lookup(h.new.GetUID())
		}
		w.mu.Unlock()
		for i, h := range held {
			if passAll || matters(verdicts[i], known[i], h.old, h.new) {
				h.pass()
			}
		}
	})
}

// remember records, for every child the reconcile applied, the check of its node and its verdict on
// the object the reconcile judged, then ends j. A check that panics is not remembered (its child wakes
// the owner).
func (w *childWatch) remember(j *judging, g *graph.Graph, res *graph.Result) {
	if w.every || g == nil || res == nil {
		j.finish(false)
		return
	}
	for _, c := range res.Children {
		n := g.Node(c.Name)
		if !c.Applied || n == nil || isNilObject(c.Object) || c.Object.GetUID() == "" {
			continue
		}
		check := n.Readiness()
		v := verdict{check: check, rv: c.Object.GetResourceVersion()}
		ok := true
		if check != nil {
			v.reason, ok = judge(check, c.Object)
		}
		w.mu.Lock()
		if ok {
			w.set(c.Object.GetUID(), v)
		} else {
			w.drop(c.Object.GetUID())
		}
		w.mu.Unlock()
	}
	j.finish(true)
}

// shrink drops half of the verdicts (any half: a lost verdict only wakes an owner). Callers hold mu.
func (w *childWatch) shrink() {
	halve(w.verdicts)
	halve(w.judged)
}

// halve deletes half of m's entries, any half.
func halve[V any](m map[types.UID]V) {
	n := len(m) / 2
	for uid := range m {
		if n == 0 {
			return
		}
		delete(m, uid)
		n--
	}
}

// forget drops the verdict of a deleted child.
func (w *childWatch) forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drop(uid)
}

// remembered returns how many verdicts are remembered.
func (w *childWatch) remembered() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count()
}

// update decides the update of a child from old to new (see childWatch): pass wakes the owner; it is
// called now, never, or once the owner's running reconcile has remembered its verdicts.
func (w *childWatch) update(old, new client.Object, pass func()) {
	if w.every || isNilObject(old) || isNilObject(new) || old.GetUID() != new.GetUID() ||
		old.GetResourceVersion() == new.GetResourceVersion() {
		pass()
		return
	}
	key, ok := w.ownerOf(old, new)
	if !ok {
		pass() // not a child of this kind's (the inner handler decides), or moved to another owner
		return
	}
	w.mu.Lock()
	if o := w.busy[key]; o != nil {
		o.held = append(o.held, heldUpdate{old: old, new: new, pass: pass})
		w.mu.Unlock()
		return
	}
	v, known := w.lookup(new.GetUID())
	w.mu.Unlock()
	if matters(v, known, old, new) {
		pass()
	}
}

// ownerOf returns the owner of this watch's kind that both old and new name in their tracking labels.
func (w *childWatch) ownerOf(old, new client.Object) (types.NamespacedName, bool) {
	a, okA := ownership.TrackedOwner(old)
	b, okB := ownership.TrackedOwner(new)
	if !okA || !okB || a != b || b.Group != w.owner.Group || b.Kind != w.owner.Kind {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: b.Namespace, Name: b.Name}, true
}

// matters reports whether an update from old to new matters to an owner that remembers v (if known)
// of the child: see childWatch.
func matters(v verdict, known bool, old, new client.Object) bool {
	switch {
	case known && v.rv == new.GetResourceVersion():
		return false // the very version the owner's last reconcile judged
	case !known || appliedChanged(old, new):
		return true
	case v.check == nil:
		return false // ready once it exists
	}
	reason, ok := judge(v.check, new)
	return !ok || reason != v.reason
}

// judge runs check on live as Graph.Apply does and returns why the child is not ready: "" when it is
// ready, "not ready" when the check gives no reason; ok is false when the check panicked.
func judge(check graph.ReadyCheck, live client.Object) (reason string, ok bool) {
	defer func() {
		if recover() != nil {
			reason, ok = "", false
		}
	}()
	ready, reason := check(live)
	switch {
	case ready:
		return "", true
	case reason == "":
		return "not ready", true
	}
	return reason, true
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
	for _, i := range contentFieldsOf(vo.Type()) {
		if !equality.Semantic.DeepEqual(vo.Field(i).Interface(), vn.Field(i).Interface()) {
			return true
		}
	}
	return false
}

// contentFields holds, by struct type, the indices of its fields that are content (isContentField):
// reflect's Type.Field builds a whole StructField at each call, so each type is worked out once.
var contentFields sync.Map // reflect.Type → []int

// contentFieldsOf returns the indices of the content fields of a typed object's struct type t.
func contentFieldsOf(t reflect.Type) []int {
	if fs, ok := contentFields.Load(t); ok {
		return fs.([]int)
	}
	var fs []int
	for i := range t.NumField() {
		if isContentField(t.Field(i)) {
			fs = append(fs, i)
		}
	}
	contentFields.Store(t, fs)
	return fs
}

// isContentField reports whether f, a field of a typed object's struct, is content: serialized, and
// neither the type, the metadata nor the status (see skippedFields).
func isContentField(f reflect.StructField) bool {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return f.IsExported() && f.Type != typeMeta && !skippedFields[name] && name != "-"
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
	h.w.update(e.ObjectOld, e.ObjectNew, func() { h.inner.Update(ctx, e, q) })
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
