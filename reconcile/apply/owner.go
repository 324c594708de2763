package apply

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
)

// The Applier's record of its own writes also serves the controller's writes to the objects it
// reconciles (finalizer and status patches), so that a reconcile that starts before the cache shows
// such a write works on its answer instead of repeating it. These methods are for that use; package
// reconcile makes them.

// RememberWrite records that the controller's write turned version rvBefore of obj, of kind gk, into
// obj (the API server's answer): while the cache shows a version the write superseded, Latest returns
// obj instead.
func (a *Applier) RememberWrite(gk schema.GroupKind, rvBefore string, obj client.Object) {
	a.known.wrote(idOf(gk, obj), "", nil, rvBefore, obj, "", true)
}

// RememberFinalized records that the controller's removal of obj's finalizer answered obj. The API
// server deletes an object whose last finalizer goes and answers with its last version, which may
// carry rvBefore, so unlike RememberWrite this records even an unchanged version.
func (a *Applier) RememberFinalized(gk schema.GroupKind, rvBefore string, obj client.Object) {
	a.known.finalized(idOf(gk, obj), rvBefore, obj)
}

// Latest returns what to work on for cached, an object of kind gk read from the cache: a copy of the
// answer to the controller's last write when cached is a version that write superseded, else cached.
func (a *Applier) Latest(gk schema.GroupKind, cached client.Object) client.Object {
	return a.known.resolve(idOf(gk, cached), cached)
}

// ForgetChildren drops what the Applier recorded of the children of owner, once owner is gone.
func (a *Applier) ForgetChildren(owner types.UID) { a.known.forgetChildren(owner) }

// Unseen reports whether the Applier wrote desired's child of owner and the cache has not shown that
// write yet (so the cache's list of owner's children may lack it).
func (a *Applier) Unseen(owner, desired client.Object) bool {
	id, err := a.identityOf(desired, owner)
	return err != nil || a.known.unseenWrite(id)
}

// Observer returns an event handler for the informer of kind gk (the reconciled kind) that never
// enqueues: it tells the record which versions the cache holds, so records go as soon as they are of
// no use.
func (a *Applier) Observer(gk schema.GroupKind) handler.EventHandler { return a.known.observer(gk) }
