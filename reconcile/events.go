package reconcile

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/convergo-dev/convergo/internal/kobj"
)

// maxEventNote is the longest note an events.k8s.io/v1 Event accepts.
const maxEventNote = 1024

// recordChildren emits a Normal event per child created, updated, recreated or pruned, and counts
// every child operation (Unchanged included) in the metrics.
func (r *Reconciler[T]) recordChildren(owner T, out outcome) {
	if out.result != nil {
		desired := map[string]client.Object{}
		if out.graph != nil {
			for _, n := range out.graph.Nodes() {
				desired[n.Name()] = n.Object()
			}
		}
		for _, c := range out.result.Children {
			if c.Operation == "" {
				continue
			}
			child := c.Object
			if child == nil {
				child = desired[c.Name]
			}
			kind := r.kindOf(child)
			r.metrics.childOperation(kind, string(c.Operation))
			if c.Operation == OperationUnchanged {
				continue
			}
			r.normal(owner, child, string(c.Operation), "Apply", strings.ToLower(string(c.Operation))+" "+kobj.DescribeKey(kind, keyOf(child)))
		}
	}
	for _, p := range out.pruned {
		kind := r.kindOf(p)
		r.metrics.childOperation(kind, string(OperationDeleted))
		r.normal(owner, p, string(OperationDeleted), "Prune", "deleted "+kobj.DescribeKey(kind, keyOf(p))+": no longer declared")
	}
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

// normal emits a Normal event about regarding (related: the child it concerns, or nil).
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
