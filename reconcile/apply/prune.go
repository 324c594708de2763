package apply

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/convergo-dev/convergo/internal/kobj"
	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile/internal/seam"
)

// Prune deletes the children of owner that are no longer declared: objects of the given types that
// carry owner's tracking label (see package ownership) and are none of the declared objects (desired
// objects, as given to Apply), e.g. the Service of an optional feature that was switched off. It lists through the Applier's client (the cache)
// and deletes with a UID precondition, as the child's DeletionPolicyAnnotation says: background
// propagation by default, foreground, or, for a kept child, no deletion at all: the child is released
// (no longer owner's; see DeletionPolicyAnnotation), logged, and not returned. Objects already being
// deleted are left alone. A child whose last write by this Applier the cache has not shown yet is read
// once from the API server first, so that its deletion policy is the one last applied. It returns the
// objects it deleted (not those the API server found already gone). Each DELETE or release is sent
// once, however long the cache takes to show it.
//
// Pass every kind the controller may create (the kinds it owns) as types: a kind no longer declared
// at all still holds children to prune.
func (a *Applier) Prune(ctx context.Context, owner client.Object, declaredObjs []client.Object, types ...client.Object) ([]client.Object, error) {
	if err := a.reachable(ctx, types...); err != nil {
		return nil, fmt.Errorf("prune: %w", err)
	}
	declared := map[objectID]bool{}
	for _, obj := range declaredObjs {
		id, err := a.identityOf(obj, owner)
		if err != nil {
			return nil, fmt.Errorf("prune: %T %s: %w", obj, obj.GetName(), err)
		}
		declared[id] = true
	}
	var deleted []client.Object
	for _, t := range types {
		items, gvk, err := a.listTracked(ctx, a.client, owner, t)
		if err != nil {
			return deleted, err
		}
		for _, item := range items {
			oid := idOf(gvk.GroupKind(), item)
			if declared[oid] || !belongsTo(item, owner) || item.GetDeletionTimestamp() != nil || a.known.deleteSent(oid, item.GetUID()) {
				continue
			}
			what := kobj.DescribeKey(gvk.Kind, client.ObjectKeyFromObject(item))
			seen := true
			if a.known.unseenWrite(oid) {
				// The cache has not shown our last write of it, which may have set its deletion policy.
				fresh, err := a.readLive(ctx, oid.key, a.proto(t))
				switch {
				case err != nil:
					return deleted, fmt.Errorf("prune %s: %w", what, err)
				case fresh == nil:
					a.known.confirmGone(oid, owner.GetUID(), "")
					continue
				case !belongsTo(fresh, owner) || fresh.GetDeletionTimestamp() != nil:
					continue
				}
				item, seen = fresh, false
			}
			policy := policyOf(item)
			if policy == policyKeep {
				if _, err := a.release(ctx, owner, oid, a.proto(t), item); err != nil {
					return deleted, fmt.Errorf("prune: %w", err)
				}
				continue
			}
			answer, err := a.deleteExactly(ctx, oid, owner.GetUID(), a.proto(t), item, seen, policy.propagation())
			if err != nil {
				return deleted, fmt.Errorf("prune %s: %w", what, err)
			}
			switch answer {
			case deletionGone:
				continue // gone already; the cache had not seen it yet
			case deletionRefused:
				continue // the next reconcile prunes it
			}
			logf.FromContext(ctx).Info("pruned child no longer declared", "object", what)
			deleted = append(deleted, item)
		}
	}
	return deleted, nil
}

// deleteOwned deletes every child of owner of the given types (found by owner's tracking label) and
// reports which children this call deleted, which still exist and whether none is left; scope says
// where it looks and in which order it deletes. Use it during deletion for kinds the graph no longer
// declares, or when the graph cannot be built (Graph.DeleteByMarks).
//
// Children are found by their tracking label in the cache (or the API server, see seam.OwnedScope), and,
// since the cache may not show a child
// written moments ago, among the children of these types the Applier wrote or deleted and the cache has
// not confirmed: those are read from the API server. Each goes as its DeletionPolicyAnnotation says
// (read from the API server when the cache has not shown the Applier's last write of it): deleted with
// background or foreground propagation, or, when kept, released and then counted as gone. A child
// counts as gone only when the API server said so or the cache saw the UID we deleted go; each DELETE
// or release is sent once. On error the result holds what was done before it.
func (a *Applier) deleteOwned(ctx context.Context, owner client.Object, scope seam.OwnedScope, types ...client.Object) (*seam.OwnedDeletion, error) {
	res := &seam.OwnedDeletion{}
	if err := a.reachable(ctx, types...); err != nil {
		return res, err
	}
	children, err := a.ownedChildren(ctx, owner, scope, types)
	if err != nil {
		return res, err
	}
	var due []bool
	if order := scope.Order; order != nil {
		objs := make([]client.Object, len(children))
		for i, c := range children {
			objs[i] = c.live
		}
		if due = order(objs); len(due) != len(objs) {
			return res, fmt.Errorf("delete owned children: the deletion order answered for %d of %d children", len(due), len(objs))
		}
	}
	for i, c := range children {
		what := kobj.DescribeKey(c.id.gk.Kind, c.id.key)
		if due != nil && !due[i] {
			res.Waiting = append(res.Waiting, what)
			continue
		}
		step, err := a.deleteLive(ctx, owner, c.id, c.proto, c.live, c.seen, policyBackground)
		if step.Live != nil {
			res.Waiting = append(res.Waiting, what)
		}
		if step.Sent != nil {
			res.Deleted = append(res.Deleted, step.Sent)
		}
		if err != nil {
			return res, fmt.Errorf("delete %s: %w", what, err)
		}
	}
	res.Done = len(res.Waiting) == 0
	return res, nil
}

// ownedChild is a child of an owner that still exists, as DeleteOwned found it.
type ownedChild struct {
	id    objectID
	proto client.Object
	live  client.Object
	seen  bool // live came from the cache
}

// ownedChildren returns the children of owner of the given types that still exist and are owner's:
// those the cache (or the API server) lists with owner's tracking label (read from the API server when
// the cache has not shown the Applier's last write of them), and those of these types the Applier
// wrote or deleted and the list did not show, read from the API server.
func (a *Applier) ownedChildren(ctx context.Context, owner client.Object, scope seam.OwnedScope, types []client.Object) ([]ownedChild, error) {
	mayHold, reader := scope.MayHold, client.Reader(a.client)
	if scope.FromAPIServer {
		mayHold, reader = nil, a.reader
	}
	var out []ownedChild
	listed := map[objectID]bool{}
	kinds := map[schema.GroupKind]bool{}
	add := func(id objectID, proto, live client.Object, seen bool) {
		if live != nil && belongsTo(live, owner) && !a.known.isGone(id, live.GetUID()) {
			out = append(out, ownedChild{id: id, proto: proto, live: live, seen: seen})
		}
	}
	for _, t := range types {
		if mayHold != nil {
			gvk, err := apiutil.GVKForObject(t, a.scheme)
			if err != nil {
				return nil, fmt.Errorf("delete owned children: %w", err)
			}
			if !mayHold(gvk.GroupKind()) {
				kinds[gvk.GroupKind()] = true
				continue
			}
		}
		items, gvk, err := a.listTracked(ctx, reader, owner, t)
		if err != nil {
			return nil, err
		}
		kinds[gvk.GroupKind()] = true
		for _, item := range items {
			id := idOf(gvk.GroupKind(), item)
			listed[id] = true
			if !belongsTo(item, owner) || a.known.isGone(id, item.GetUID()) {
				continue
			}
			if scope.FromAPIServer || !a.known.unseenWrite(id) {
				add(id, a.proto(t), item, !scope.FromAPIServer)
				continue
			}
			// The cache has not shown our last write of it, which may have set its deletion policy.
			if err := a.readOwned(ctx, owner, id, a.proto(t), add); err != nil {
				return nil, err
			}
		}
	}
	for _, p := range a.known.unsettled(owner.GetUID()) {
		if listed[p.id] || !kinds[p.id.gk] || a.known.goneByCache(p.id) {
			continue
		}
		if err := a.readOwned(ctx, owner, p.id, p.proto, add); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readOwned reads the child id from the API server and hands it to add; a child the API server does
// not have is confirmed gone.
func (a *Applier) readOwned(ctx context.Context, owner client.Object, id objectID, proto client.Object, add func(objectID, client.Object, client.Object, bool)) error {
	fresh, err := a.readLive(ctx, id.key, proto)
	if err != nil {
		return fmt.Errorf("delete %s: %w", kobj.DescribeKey(id.gk.Kind, id.key), err)
	}
	if fresh == nil {
		a.known.confirmGone(id, owner.GetUID(), "")
		return nil
	}
	add(id, proto, fresh, false)
	return nil
}

// identityOf returns the identity desired has once applied for owner (namespace defaulted).
func (a *Applier) identityOf(desired, owner client.Object) (objectID, error) {
	gvk, err := apiutil.GVKForObject(desired, a.scheme)
	if err != nil {
		return objectID{}, err
	}
	namespaced, err := a.namespaced(desired, owner, gvk)
	if err != nil {
		return objectID{}, err
	}
	ns := desired.GetNamespace()
	switch {
	case !namespaced:
		ns = ""
	case ns == "" && owner != nil:
		ns = owner.GetNamespace()
	}
	return objectID{gk: gvk.GroupKind(), key: client.ObjectKey{Namespace: ns, Name: desired.GetName()}}, nil
}

// listTracked lists through reader the objects of t's kind carrying owner's tracking label, in all
// namespaces.
func (a *Applier) listTracked(ctx context.Context, reader client.Reader, owner, t client.Object) ([]client.Object, schema.GroupVersionKind, error) {
	gvk, err := apiutil.GVKForObject(t, a.scheme)
	if err != nil {
		return nil, gvk, fmt.Errorf("list tracked children: %w", err)
	}
	list, err := a.newList(t, gvk)
	if err != nil {
		return nil, gvk, fmt.Errorf("list tracked %s: %w", gvk.Kind, err)
	}
	if err := reader.List(ctx, list, client.MatchingLabels{ownership.OwnerUIDLabel: string(owner.GetUID())}); err != nil {
		return nil, gvk, fmt.Errorf("list tracked %s: %w", gvk.Kind, err)
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, gvk, fmt.Errorf("list tracked %s: %w", gvk.Kind, err)
	}
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		co, ok := o.(client.Object)
		if !ok {
			return nil, gvk, fmt.Errorf("list tracked %s: item %T is not a client.Object", gvk.Kind, o)
		}
		out = append(out, co)
	}
	return out, gvk, nil
}

func (a *Applier) newList(t client.Object, gvk schema.GroupVersionKind) (client.ObjectList, error) {
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	if _, ok := t.(*unstructured.Unstructured); ok {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(listGVK)
		return l, nil
	}
	o, err := a.scheme.New(listGVK)
	if err != nil {
		return nil, err
	}
	l, ok := o.(client.ObjectList)
	if !ok {
		return nil, fmt.Errorf("%T is not a list", o)
	}
	return l, nil
}
