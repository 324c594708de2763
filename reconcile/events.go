package reconcile

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/convergo-dev/convergo/internal/kobj"
	"github.com/convergo-dev/convergo/internal/telemetry"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/status"
)

// Reasons of the Reconciler's Normal events.k8s.io events. Its Warning events use condition reasons
// (an *InvalidSpecError's reason, reasonInvalidGraph, reasonReconcileError; reasonDeleteFailed when
// deleting the children of an object being deleted failed, reasonDeletionFailed when the Cleanup hook
// or the finalizer removal failed).
//
// Normal events are few: at most one per reconcile, and only when children were recreated or pruned
// or, with WithChangeEvents, created, updated or deleted with their owner.
const (
	// eventChildrenApplied (Normal): this reconcile recreated or pruned children (or, with
	// WithChangeEvents, created or updated some); the note lists every child it changed, e.g.
	// "created ConfigMap demo/alice, Deployment demo/alice; pruned Service demo/old".
	eventChildrenApplied = "ChildrenApplied"
	// eventChildrenDeleted (Normal, with WithChangeEvents): this pass of a deletion deleted
	// children; the note lists them, so that successive events show the teardown order.
	eventChildrenDeleted = "ChildrenDeleted"
)

// maxEventNote is the longest note an events.k8s.io/v1 Event accepts.
const maxEventNote = 1024

// noteEntry is one child in an event note: what happened to it ("created") and which it is.
type noteEntry struct {
	verb string
	what string
}

// verbs of the note, by operation.
var noteVerbs = map[apply.Operation]string{
	apply.OperationCreated:   "created",
	apply.OperationUpdated:   "updated",
	apply.OperationRecreated: "recreated",
	apply.OperationDeleted:   "deleted",
}

// recordChildren counts every child operation of a reconcile (Unchanged included) in the metrics and
// emits one Normal ChildrenApplied event listing the children created, updated, recreated or pruned,
// when some were recreated or pruned, or with WithChangeEvents when any changed.
func (r *Reconciler[T]) recordChildren(ctx context.Context, owner T, out outcome) {
	var (
		entries     []noteEntry
		first       client.Object
		destructive = len(out.pruned) > 0
		repairs     = repairing(ctx, owner)
	)
	if out.result != nil {
		for _, c := range out.result.Children {
			if c.Operation == "" {
				continue
			}
			if c.Operation != apply.OperationUnchanged {
				r.metrics.nodeWrite(c.Name, string(c.Operation))
			}
			if c.Operation == apply.OperationUpdated && repairs {
				r.metrics.driftRepair(c.Name)
			}
			var n *graph.Node
			if out.graph != nil {
				n = out.graph.Node(c.Name)
			}
			if extKind, id, ok := n.External(); ok {
				r.metrics.childOperation(extKind, string(c.Operation))
				if c.Operation != apply.OperationUnchanged {
					entries = append(entries, noteEntry{verb: noteVerbs[c.Operation], what: extKind + " " + id})
				}
				continue
			}
			child := c.Object
			if child == nil && n != nil {
				child = n.Object()
			}
			kind := r.kindOf(child)
			r.metrics.childOperation(kind, string(c.Operation))
			if c.Operation == apply.OperationUnchanged {
				continue
			}
			if c.Operation == apply.OperationRecreated {
				destructive = true
			}
			if first == nil && child != nil {
				first = child
			}
			entries = append(entries, noteEntry{verb: noteVerbs[c.Operation], what: kobj.DescribeKey(kind, keyOf(child))})
		}
	}
	for _, p := range out.pruned {
		kind := r.kindOf(p)
		r.metrics.childOperation(kind, string(apply.OperationDeleted))
		if first == nil {
			first = p
		}
		entries = append(entries, noteEntry{verb: "pruned", what: kobj.DescribeKey(kind, keyOf(p))})
	}
	if len(entries) > 0 && (destructive || r.changeEvents) {
		r.normal(owner, first, eventChildrenApplied, "Apply", compactNote(entries, maxEventNote))
	}
}

// repairing reports whether the children this reconcile updates are repairs of drift: owner's
// spec was applied already (its Ready condition has seen its generation) and the reconcile was
// brought by a child's change, the controller's start-up or the interval, not by a change of the
// owner or of an input a watch maps to it.
func repairing(ctx context.Context, owner client.Object) bool {
	switch why, _ := telemetry.Trigger(ctx); why {
	case triggerChild, triggerStartup, triggerInterval:
	default:
		return false
	}
	conditions, ok := owner.(status.Object)
	if !ok {
		return false
	}
	ready := meta.FindStatusCondition(conditions.GetConditions(), status.Ready)
	return ready != nil && ready.ObservedGeneration == owner.GetGeneration()
}

// recordDeleted counts the children a deletion pass deleted and, with WithChangeEvents, emits one
// Normal ChildrenDeleted event listing them, if any.
func (r *Reconciler[T]) recordDeleted(owner T, deleted []graph.ChildResult) {
	entries := make([]noteEntry, 0, len(deleted))
	for _, c := range deleted {
		kind := r.kindOf(c.Object)
		r.metrics.childOperation(kind, string(apply.OperationDeleted))
		if c.Name != "" {
			r.metrics.nodeWrite(c.Name, string(apply.OperationDeleted))
		}
		entries = append(entries, noteEntry{verb: "deleted", what: kobj.DescribeKey(kind, keyOf(c.Object))})
	}
	if len(entries) > 0 && r.changeEvents {
		r.normal(owner, deleted[0].Object, eventChildrenDeleted, "Delete", compactNote(entries, maxEventNote))
	}
}

// compactNote lists entries in order, one verb per run of equal verbs: "created ConfigMap ns/a,
// Deployment ns/a; pruned Service ns/old". What does not fit in limit bytes is summarised as
// " and N more".
func compactNote(entries []noteEntry, limit int) string {
	pieces := make([]string, len(entries))
	total := 0
	for i, e := range entries {
		switch {
		case i == 0:
			pieces[i] = e.verb + " " + e.what
		case e.verb == entries[i-1].verb:
			pieces[i] = ", " + e.what
		default:
			pieces[i] = "; " + e.verb + " " + e.what
		}
		total += len(pieces[i])
	}
	if total <= limit {
		return strings.Join(pieces, "")
	}
	var b strings.Builder
	for i, piece := range pieces {
		reserve := 0
		if rest := len(entries) - i - 1; rest > 0 {
			reserve = len(fmt.Sprintf(" and %d more", rest))
		}
		if b.Len()+len(piece)+reserve > limit {
			// The previous entry left room for this suffix.
			fmt.Fprintf(&b, " and %d more", len(entries)-i)
			return strings.TrimSpace(b.String())
		}
		b.WriteString(piece)
	}
	return b.String()
}

// kindOf returns obj's kind from its type (or its own GVK for unstructured objects).
func (r *Reconciler[T]) kindOf(obj client.Object) string {
	if obj == nil {
		return "Unknown"
	}
	if gvk, err := apiutil.GVKForObject(obj, r.scheme); err == nil {
		return gvk.Kind
	}
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return "Unknown"
}

// keyOf returns obj's namespace and name; a nil obj has neither.
func keyOf(obj client.Object) client.ObjectKey {
	if obj == nil {
		return client.ObjectKey{}
	}
	return client.ObjectKeyFromObject(obj)
}

// normal emits a Normal event about regarding. related is the (first) child it concerns, or nil: the
// events API folds events with the same reason, regarding and related object into one series (keeping
// the first note), so naming the first child keeps successive passes apart.
func (r *Reconciler[T]) normal(regarding, related runtime.Object, reason, action, note string) {
	r.event(regarding, related, corev1.EventTypeNormal, reason, action, note)
}

// warn emits a Warning event about regarding.
func (r *Reconciler[T]) warn(regarding, related runtime.Object, reason, action, note string) {
	r.event(regarding, related, corev1.EventTypeWarning, reason, action, note)
}

func (r *Reconciler[T]) event(regarding, related runtime.Object, eventType, reason, action, note string) {
	if r.recorder == nil {
		return
	}
	if len(note) > maxEventNote {
		note = strings.ToValidUTF8(note[:maxEventNote-3], "") + "..."
	}
	// The note is a format string for the recorder: pass it as an argument.
	r.recorder.Eventf(regarding, related, eventType, reason, action, "%s", note)
}
