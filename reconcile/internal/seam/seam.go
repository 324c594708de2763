package seam

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
)

// Writes is an Applier's record of its own writes, which also serves the controller's writes to the
// objects it reconciles (finalizer and status patches): a reconcile that starts before the cache shows
// such a write works on its answer instead of repeating it.
type Writes interface {
	// RememberWrite records that the controller's write turned version rvBefore of obj, of kind gk,
	// into obj (the API server's answer): while the cache shows a version the write superseded,
	// Latest returns obj instead.
	RememberWrite(gk schema.GroupKind, rvBefore string, obj client.Object)
	// RememberFinalized records that the controller's removal of obj's finalizer answered obj. The
	// API server deletes an object whose last finalizer goes and answers with its last version, which
	// may carry rvBefore, so unlike RememberWrite this records even an unchanged version.
	RememberFinalized(gk schema.GroupKind, rvBefore string, obj client.Object)
	// Latest returns what to work on for cached, an object of kind gk read from the cache: a copy of
	// the answer to the controller's last write when cached is a version that write superseded, else
	// cached.
	Latest(gk schema.GroupKind, cached client.Object) client.Object
	// ForgetChildren drops what the Applier recorded of the children of owner, once owner is gone.
	ForgetChildren(owner types.UID)
	// Unseen reports whether the Applier wrote desired's child of owner and the cache has not shown
	// that write yet (so the cache's list of owner's children may lack it).
	Unseen(owner, desired client.Object) bool
	// Observer returns an event handler for the informer of kind gk (the reconciled kind) that never
	// enqueues: it tells the record which versions the cache holds, so records go as soon as they are
	// of no use.
	Observer(gk schema.GroupKind) handler.EventHandler
	// MayWrite reports whether the Applier may write now: the error of its write guard, nil without
	// one. Callers that write elsewhere on the Applier's behalf (the external nodes of a graph) ask it
	// before each write.
	MayWrite() error
}

// Hook is embedded in apply.Applier under an unexported name, so that Of reaches the Applier's
// Writes through a method no other package can call or implement.
type Hook struct{ w Writes }

func (h *Hook) seamWrites() Writes { return h.w }

// Set makes w what Of returns for the Applier that embeds h.
func Set(h *Hook, w Writes) { h.w = w }

// Of returns the Writes of an Applier (a value that embeds a Hook given to Set).
func Of(a interface{ seamWrites() Writes }) Writes { return a.seamWrites() }
