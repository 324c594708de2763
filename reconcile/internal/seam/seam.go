package seam

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/handler"
)

// Applier is what graph and reconcile ask of an apply.Applier beyond its public methods: its record
// of its own writes, which also serves the controller's writes to the objects it reconciles
// (finalizer and status patches), so that a reconcile that starts before the cache shows such a write
// works on its answer instead of repeating it; its write guard; and the deletion of an owner's
// children by their tracking label.
type Applier interface {
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
	// DeleteOwned deletes every child of owner of the given types (found by owner's tracking label)
	// and reports which children this call deleted, which still exist and whether none is left; scope
	// says where it looks and in which order it deletes.
	DeleteOwned(ctx context.Context, owner client.Object, scope OwnedScope, types ...client.Object) (*OwnedDeletion, error)
	// SetMembers gives the Applier its member clusters: lookup finds one by name (for Applier.In),
	// names lists them (for the sweeps of pruning and deletion).
	SetMembers(lookup func(name string) (cluster.Cluster, bool), names func() []string)
	// MemberNames returns the names of the member clusters the Applier knows now.
	MemberNames() []string
}

// UnknownClusterError reports a child placed in a member cluster the Applier does not know: not (or
// no longer) in the Reconciler's member.Set.
type UnknownClusterError struct {
	// Name is the member cluster's name.
	Name string
}

// Error says what to do.
func (e *UnknownClusterError) Error() string {
	return fmt.Sprintf("member cluster %q is not known: add it to the member.Set given to reconcile.WithMemberClusters "+
		"(Set.Add, or for Set.FromSecrets a Secret labelled convergo.dev/member-cluster=%s holding its kubeconfig)", e.Name, e.Name)
}

// OwnedDeletion is what one DeleteOwned pass did.
type OwnedDeletion struct {
	// Done is true when none of the children exists any more.
	Done bool
	// Deleted lists the children whose deletion this pass sent, as read before the deletion.
	Deleted []client.Object
	// Waiting lists the children that still exist, "Kind ns/name", in the order of the types and then
	// of the list.
	Waiting []string
}

// OwnedScope says where DeleteOwned looks for an owner's children and in which order it deletes them.
// The zero OwnedScope lists every kind through the cache and deletes every child at once.
type OwnedScope struct {
	// MayHold, when not nil, says which kinds the cache may hold a child of: only those are listed
	// (the children of the other kinds the Applier wrote or deleted and the cache has not confirmed
	// are still read from the API server).
	MayHold func(schema.GroupKind) bool
	// FromAPIServer lists through the API reader instead of the cache (one LIST per kind): what it
	// does not list is gone, whatever the cache shows or misses, even right after a restart.
	FromAPIServer bool
	// Order, when not nil, is given every child that still exists and says for each whether its
	// deletion is due now (due[i] for children[i]); the others wait for a later pass. Package graph
	// orders children by the node marks each carries (Graph.DeleteByMarks).
	Order func(children []client.Object) (due []bool)
}

// Hook is embedded in apply.Applier under an unexported name, so that Of reaches the Applier's
// Applier through a method no other package can call or implement.
type Hook struct{ a Applier }

func (h *Hook) seamApplier() Applier { return h.a }

// Set makes a what Of returns for the Applier that embeds h.
func Set(h *Hook, a Applier) { h.a = a }

// Of returns the seam of an apply.Applier (a value that embeds a Hook given to Set).
func Of(a interface{ seamApplier() Applier }) Applier { return a.seamApplier() }
