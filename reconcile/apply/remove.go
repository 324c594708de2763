package apply

import (
	"context"

	"github.com/convergo-dev/convergo/internal/kobj"
	"github.com/convergo-dev/convergo/ownership"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Exists reports whether desired's child of owner exists, by the cache (no request): shown, owner's,
// not being deleted and not known gone. A cache that has not seen a child created makes its change wait
// one more pass; one that has not seen someone else delete it lets its re-creation skip the wait once.
func (a *Applier) Exists(ctx context.Context, owner, desired client.Object) bool {
	id, err := a.identityOf(desired, owner)
	if err != nil || a.reachable(ctx, desired) != nil {
		return false
	}
	live := kobj.New(desired)
	if err := a.client.Get(ctx, id.key, live); err != nil {
		return false
	}
	return belongsTo(live, owner) && live.GetDeletionTimestamp() == nil && !a.known.isGone(id, live.GetUID())
}

// DeleteStep is what one Delete of a child found and did.
type DeleteStep struct {
	// Live is the child while it still exists; nil once it is gone.
	Live client.Object
	// Sent is the child whose DELETE this step sent (removed at once or being deleted); nil when none
	// was sent.
	Sent client.Object
}

// Delete deletes desired's live object when it is owner's and not gone, as the stronger of
// desired's deletion policy and the live child's says (a kept child is released). Absence is never taken
// from the cache alone: a cache miss counts as gone only when the API server said so before, or when
// the cache showed the very UID whose deletion we sent (its informer has seen it go); otherwise the
// child is read once from the API server. Each child's DELETE (or release) is sent once.
func (a *Applier) Delete(ctx context.Context, owner, desired client.Object) (DeleteStep, error) {
	id, err := a.identityOf(desired, owner)
	if err != nil {
		return DeleteStep{}, err
	}
	if err := a.reachable(ctx, desired); err != nil {
		return DeleteStep{}, err
	}
	want := policyOf(desired)
	cached := kobj.New(desired)
	err = a.client.Get(ctx, id.key, cached)
	switch {
	case err == nil && a.known.isGone(id, cached.GetUID()):
		return DeleteStep{}, nil // the cache has not seen the deletion the API server confirmed
	case err == nil && (belongsTo(cached, owner) || !a.known.unseenWrite(id)):
		return a.deleteLive(ctx, owner, id, a.proto(desired), cached, true, want)
	case err == nil, apierrors.IsNotFound(err) && !a.known.goneByCache(id):
		return a.deleteRead(ctx, owner, id, a.proto(desired), want)
	case apierrors.IsNotFound(err):
		return DeleteStep{}, nil
	}
	return DeleteStep{}, err
}

// deleteRead reads the child id from the API server and deletes it when it is owner's (see deleteLive).
func (a *Applier) deleteRead(ctx context.Context, owner client.Object, id objectID, proto client.Object, want deletionPolicy) (DeleteStep, error) {
	fresh, err := a.readLive(ctx, id.key, proto)
	switch {
	case err != nil:
		return DeleteStep{}, err
	case fresh == nil:
		a.known.confirmGone(id, owner.GetUID(), "")
		return DeleteStep{}, nil
	}
	return a.deleteLive(ctx, owner, id, proto, fresh, false, want)
}

// deleteLive deletes live (UID precondition) unless it is not owner's, is already being deleted, or
// our DELETE of it was accepted before; the stronger of want and live's own deletion policy decides how:
// released when kept, else with background or foreground propagation. seen says whether live came
// from the cache.
func (a *Applier) deleteLive(ctx context.Context, owner client.Object, id objectID, proto, live client.Object, seen bool, want deletionPolicy) (DeleteStep, error) {
	policy := want.or(policyOf(live))
	switch {
	case !belongsTo(live, owner):
		return DeleteStep{}, nil // a foreign object, or a successor that is not ours: ours is gone
	case policy == policyKeep:
		return a.release(ctx, owner, id, proto, live)
	case live.GetDeletionTimestamp() != nil, a.known.deleteSent(id, live.GetUID()):
		return DeleteStep{Live: live}, nil // being deleted: wait for it
	}
	answer, err := a.deleteExactly(ctx, id, owner.GetUID(), proto, live, seen, policy.propagation())
	switch {
	case err != nil:
		return DeleteStep{Live: live}, err
	case answer == deletionGone:
		return DeleteStep{}, nil // the API server answered 404, or another UID holds the name
	case answer == deletionRefused:
		return DeleteStep{Live: live}, nil // nothing happened: the next pass looks again
	case answer == deletionRemoved:
		logf.FromContext(ctx).V(1).Info("deleted child", "object", kobj.DescribeKey(id.gk.Kind, id.key))
		return DeleteStep{Sent: live}, nil
	}
	logf.FromContext(ctx).V(1).Info("deleting child", "object", kobj.DescribeKey(id.gk.Kind, id.key))
	return DeleteStep{Live: live, Sent: live}, nil
}

// Describe names obj as "Kind ns/name" (its kind from the Applier's scheme).
func (a *Applier) Describe(obj client.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if gvk, err := apiutil.GVKForObject(obj, a.scheme); err == nil {
		kind = gvk.Kind
	}
	return kobj.DescribeKey(kind, client.ObjectKeyFromObject(obj))
}

// belongsTo reports whether live is controlled by owner or tracked with its UID.
func belongsTo(live, owner client.Object) bool {
	return ownership.IsControlledBy(live, owner) || ownership.IsTrackedBy(live, owner)
}
