package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

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
	// Whether each child, then each external object, is due, as the children that exist when this
	// pass begins hold them back (even those this pass deletes: the next pass looks again).
	var due []bool
	order := func(live []client.Object) []bool {
		due = dueByMarks(markedChildren(live), markedExternals(externals))
		return due[:len(live)]
	}
	owned, err := seam.Of(a).DeleteOwned(ctx, owner, seam.OwnedScope{FromAPIServer: true, Order: order}, types...)
	res := &DeleteResult{Waiting: owned.Waiting}
	for _, obj := range owned.Deleted {
		res.Deleted = append(res.Deleted, ChildResult{Name: obj.GetAnnotations()[marks.Node], Object: obj, Operation: apply.OperationDeleted})
	}
	if err != nil {
		return res, err
	}
	externalDue := due[len(due)-len(externals):]
	var errs []error
	for i, e := range externals {
		name := fmt.Sprintf("%s: %s %s", e.Node, e.Kind, e.ID)
		ops, ok := g.kindOps(e.Kind)
		switch {
		case !ok: // said at once, even before its turn: the deletion cannot finish without it
			res.Waiting = append(res.Waiting, name)
			errs = append(errs, nodeError(e.Node, StepDelete, fmt.Errorf(
				"external object %s is recorded on the owner but its kind %q is unknown without the graph: declare it with graph.WithExternalKinds (reconcile.WithExternalKinds for a Reconciler), or fix the spec", name, e.Kind)))
			continue
		case !externalDue[i]:
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
