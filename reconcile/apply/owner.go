package apply

import (
	"context"

	"github.com/convergo-dev/convergo/reconcile/internal/seam"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/handler"
)

// hook is seam.Hook under a name that does not export the embedded field.
type hook = seam.Hook

// writes is the Applier's seam.Applier: what packages graph and reconcile ask of it beyond its public
// methods (see package seam for each method's contract).
type writes struct{ a *Applier }

var _ seam.Applier = writes{}

func (w writes) RememberWrite(gk schema.GroupKind, rvBefore string, obj client.Object) {
	w.a.known.wrote(idOf(gk, obj), "", nil, rvBefore, obj, "", true)
}

func (w writes) RememberFinalized(gk schema.GroupKind, rvBefore string, obj client.Object) {
	w.a.known.finalized(idOf(gk, obj), rvBefore, obj)
}

func (w writes) Latest(gk schema.GroupKind, cached client.Object) client.Object {
	return w.a.known.resolve(idOf(gk, cached), cached)
}

func (w writes) ForgetChildren(owner types.UID) { w.a.known.forgetChildren(owner) }

func (w writes) Unseen(owner, desired client.Object) bool {
	id, err := w.a.identityOf(desired, owner)
	return err != nil || w.a.known.unseenWrite(id)
}

func (w writes) Observer(gk schema.GroupKind) handler.EventHandler { return w.a.known.observer(gk) }

func (w writes) MayWrite() error { return w.a.mayWrite() }

func (w writes) DeleteOwned(ctx context.Context, owner client.Object, scope seam.OwnedScope, types ...client.Object) (*seam.OwnedDeletion, error) {
	return w.a.deleteOwned(ctx, owner, scope, types...)
}

func (w writes) SetMembers(lookup func(name string) (cluster.Cluster, bool), names func() []string) {
	w.a.setMembers(lookup, names)
}

func (w writes) MemberNames() []string { return w.a.memberNames() }
