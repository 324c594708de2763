package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/internal/marks"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/internal/seam"
)

// DeleteByMarks deletes what owner holds when its Graph cannot be built (an invalid spec, a
// referenced object gone); call it on a Graph without nodes, New(opts...): its cluster children of the given types, listed by owner's tracking label
// from the API server (one LIST per kind, so that a cache that lags or filters cannot make a child
// look gone), and the external objects recorded on owner (marks.External), in reverse dependency
// order as the marks say that Apply left on each (marks.Node and marks.DependsOn on a child,
// the node and its dependencies in the record for an external object). Something is deleted once
// nothing left of owner depends on its node; a child without a node mark is deleted at once. Each
// goes as Delete would delete it: a kept child or external object is released.
//
// The kinds of the external objects come from g's options (WithExternalKinds): a recorded object of a kind
// none declares is an error that names the kind, and stays recorded. Call it again, as Delete, until
// Done.
func (g *Graph) DeleteByMarks(ctx context.Context, a *apply.Applier, owner client.Object, types ...client.Object) (*DeleteResult, error) {
	rec := newRecord(a, owner)
	if rec.err != nil {
		return &DeleteResult{}, rec.err
	}
	externals := rec.list()
	res := &DeleteResult{}
	members := seam.Of(a).MemberNames()
	var due dueness
	if len(members) > 0 {
		var err error
		if due, err = dueAcrossClusters(ctx, a, owner, externals, types); err != nil {
			return res, err
		}
	}
	var errs []error
	for _, name := range append([]string{""}, members...) {
		ma, err := a.In(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("member cluster %q: %w", name, err))
			continue
		}
		order := func(live []client.Object) []bool {
			if len(members) == 0 { // one cluster: judged on the one list
				all := dueByMarks(markedChildren(live), markedExternals(externals))
				due.externals = all[len(live):]
				return all[:len(live)]
			}
			out := make([]bool, len(live))
			for i, obj := range live {
				out[i] = due.children[childKey{name, obj.GetUID()}]
			}
			return out
		}
		owned, err := seam.Of(ma).DeleteOwned(ctx, owner, seam.OwnedScope{FromAPIServer: true, Order: order}, types...)
		for _, w := range owned.Waiting {
			res.Waiting = append(res.Waiting, w+inMember(name))
		}
		for _, obj := range owned.Deleted {
			res.Deleted = append(res.Deleted, ChildResult{Name: obj.GetAnnotations()[marks.Node], Object: obj, Operation: apply.OperationDeleted})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("delete the children%s: %w", inMember(name), err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	for i, e := range externals {
		name := fmt.Sprintf("%s: %s %s", e.Node, e.Kind, e.ID)
		ops, ok := g.kindOps(e.Kind)
		switch {
		case !ok: // said at once, even before its turn: the deletion cannot finish without it
			res.Waiting = append(res.Waiting, name)
			errs = append(errs, nodeError(e.Node, StepDelete, fmt.Errorf(
				"external object %s is recorded on the owner but its kind %q is unknown without the graph: declare it with graph.WithExternalKinds (reconcile.WithExternalKinds for a Reconciler), or fix the spec", name, e.Kind)))
			continue
		case !due.externals[i]:
			res.Waiting = append(res.Waiting, name)
			continue
		}
		gone, err := deleteExternal(ctx, rec, ops, e.ID, e.Keep)
		switch {
		case err != nil:
			res.Waiting = append(res.Waiting, name)
			errs = append(errs, nodeError(e.Node, StepDelete, fmt.Errorf("delete external object %s: %w", name, err)))
		case !gone:
			res.Waiting = append(res.Waiting, name)
		default:
			if err := rec.remove(ctx, e.Kind, e.ID); err != nil {
				res.Waiting = append(res.Waiting, name)
				errs = append(errs, err)
			}
		}
	}
	res.Done = len(res.Waiting) == 0
	return res, errors.Join(errs...)
}

// childKey names a child across clusters: its member cluster ("" for the owner's) and UID.
type childKey struct {
	cluster string
	uid     types.UID
}

// dueness says which children and external objects an ordered deletion by marks may delete now.
type dueness struct {
	children  map[childKey]bool
	externals []bool
}

// dueAcrossClusters lists owner's children of the given types in its own cluster and in every
// member cluster the Applier knows (from the API servers: one LIST per kind and cluster), and says
// which of them, and of the recorded external objects, are due: a node mark may name a node in
// another cluster, so the order is judged over all of them at once. Listing deletes nothing.
func dueAcrossClusters(ctx context.Context, a *apply.Applier, owner client.Object, externals []ExternalRecord, types []client.Object) (dueness, error) {
	var (
		keys []childKey
		objs []client.Object
		errs []error
	)
	for _, name := range append([]string{""}, seam.Of(a).MemberNames()...) {
		ma, err := a.In(name)
		if err == nil {
			list := func(live []client.Object) []bool {
				for _, obj := range live {
					keys, objs = append(keys, childKey{name, obj.GetUID()}), append(objs, obj)
				}
				return make([]bool, len(live)) // none due: only listed
			}
			_, err = seam.Of(ma).DeleteOwned(ctx, owner, seam.OwnedScope{FromAPIServer: true, Order: list}, types...)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("list the children%s: %w", inMember(name), err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return dueness{}, err
	}
	due := dueByMarks(markedChildren(objs), markedExternals(externals))
	d := dueness{children: make(map[childKey]bool, len(keys)), externals: due[len(keys):]}
	for i, k := range keys {
		d.children[k] = due[i]
	}
	return d, nil
}

// marked is one thing an owner holds, as its marks describe it: its node (empty when unmarked) and
// the nodes it depends on.
type marked struct {
	node string
	deps []string
}

func markedChildren(objs []client.Object) []marked {
	out := make([]marked, len(objs))
	for i, obj := range objs {
		out[i] = marked{node: obj.GetAnnotations()[marks.Node], deps: splitMark(obj.GetAnnotations()[marks.DependsOn])}
	}
	return out
}

func markedExternals(entries []ExternalRecord) []marked {
	out := make([]marked, len(entries))
	for i, e := range entries {
		out[i] = marked{node: e.Node, deps: splitMark(e.DependsOn)}
	}
	return out
}

// splitMark splits a list of node names as marks.DependsOn holds them.
func splitMark(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// dueByMarks says, for each of children then of externals, whether its deletion is due: it has no
// node, or nothing else still there depends on its node.
func dueByMarks(children, externals []marked) []bool {
	all := slices.Concat(children, externals)
	due := make([]bool, len(all))
	for i, m := range all {
		due[i] = m.node == "" || !slices.ContainsFunc(all, func(o marked) bool {
			return o.node != m.node && slices.Contains(o.deps, m.node)
		})
	}
	return due
}
