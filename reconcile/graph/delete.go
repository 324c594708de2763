package graph

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/convergo-dev/convergo/internal/telemetry"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/internal/seam"
)

// DeleteResult is what one deletion pass did: Graph.Delete, DeleteByMarks, or the Reconciler's sweep
// of the children of kinds the graph does not declare.
type DeleteResult struct {
	// Done is true when none of the children exists any more.
	Done bool
	// Deleted lists, in reverse topological order, the children whose deletion this pass sent: Operation is
	// apply.OperationDeleted and Object the live object as read before the deletion. A child already being
	// deleted (or found gone by the API server) is not listed. Name is the child's name in the graph,
	// empty for a child found by its tracking label only (the sweep).
	Deleted []ChildResult
	// Waiting lists the children that still exist, "name: Kind ns/name" ("Kind ns/name" without a
	// graph name): for a graph only those whose deletion was due, which hold back the children they
	// depend on.
	Waiting []string
}

// Delete removes the children in reverse dependency order and reports whether all are gone. A child
// is deleted (UID precondition; background propagation, or foreground when the node or the live child
// says so, see DeletionPropagation) as soon as every child that depends on it is gone (a kept child is
// released instead and then counts as gone, see KeepOnDelete), concurrently with the others (at most
// 8 at a time): a slow child holds back only the children it depends on, and when the API server
// removes children at once (no finalizer holds them; see WithConnection) the whole graph goes in one
// pass. A child that still exists, or whose deletion failed, holds back its dependencies. Only
// children that are owner's (controlled by it, or tracked with its UID) are deleted; an object with
// the same name that is not owner's does not count, and is left alone. Progress is derived from live
// state only, so calling Delete again, after a restart, with a new Graph and Applier, resumes where it
// stopped. Call it until the result is Done; requeue meanwhile (deletions also trigger watch events).
// The result also says which children this pass deleted and which ones it waits for; errors name the
// child (several are joined), and the result holds what was done.
//
// Absence is never taken from the cache alone: a child counts as gone when the API server says so (a
// DELETE answered as removed or 404, or another UID holds the name), or when the cache saw the very
// UID whose deletion this Applier sent go; a child the cache does not show is read once. Each DELETE
// (or release) is sent once.
func (g *Graph) Delete(ctx context.Context, a *apply.Applier, owner client.Object) (*DeleteResult, error) {
	order, deps, err := g.ordered()
	if err != nil {
		return nil, err
	}
	dependents := make([][]int, len(order))
	for i := range order {
		for _, d := range deps[i] {
			dependents[d] = append(dependents[d], i)
		}
	}
	var (
		steps = make([]apply.DeleteStep, len(order))
		gone  = make([]bool, len(order))
		errs  = make([]error, len(order))
		rec   = newRecord(a, owner)
	)
	inDependencyOrder(dependents, func(i int) { // gone[j] of each dependent j is final
		if !due(i, dependents, gone) {
			return // held back by a dependent that still exists
		}
		ctx, span := startSpan(ctx, "delete "+order[i], attrNode.String(order[i]))
		if e := g.index[order[i]].ext; e != nil {
			span.SetAttributes(attrKind.String(e.ops.kind), attrID.String(e.id))
			if gone[i], errs[i] = deleteExternal(ctx, rec, e.ops, e.id, e.keep); errs[i] != nil {
				errs[i] = nodeError(order[i], StepDelete, fmt.Errorf("delete external node %q (%s %s): %w", order[i], e.ops.kind, e.id, errs[i]))
			}
			span.SetAttributes(attrGone.Bool(gone[i]))
			telemetry.EndSpan(span, errs[i])
			return
		}
		n := g.index[order[i]]
		steps[i], gone[i], errs[i] = deleteChild(ctx, a, owner, n)
		span.SetAttributes(deleteAttrs(steps[i])...)
		telemetry.EndSpan(span, errs[i])
		if errs[i] != nil {
			errs[i] = nodeError(order[i], StepDelete, fmt.Errorf("delete child %q%s: %w", order[i], inMember(n.cluster), errs[i]))
		}
	})
	res := &DeleteResult{Done: true}
	for i := len(order) - 1; i >= 0; i-- {
		if steps[i].Sent != nil {
			res.Deleted = append(res.Deleted, ChildResult{Name: order[i], Object: steps[i].Sent, Operation: apply.OperationDeleted})
		}
		if steps[i].Live != nil && errs[i] == nil {
			res.Waiting = append(res.Waiting, order[i]+": "+a.Describe(steps[i].Live)+inMember(g.index[order[i]].cluster))
		}
		if e := g.index[order[i]].ext; e != nil && !gone[i] && errs[i] == nil && due(i, dependents, gone) {
			res.Waiting = append(res.Waiting, fmt.Sprintf("%s: %s %s", order[i], e.ops.kind, e.id))
		}
		res.Done = res.Done && gone[i]
	}
	if res.Done && errors.Join(errs...) == nil {
		// Every declared child is gone: then the external objects recorded on the owner that the
		// graph no longer declares (a spec changed their identity).
		left, _, err := g.deleteUndeclared(ctx, rec, false)
		if err != nil {
			return res, err
		}
		res.Waiting = append(res.Waiting, left...)
		res.Done = len(left) == 0
	}
	if len(res.Waiting) > 0 {
		logf.FromContext(ctx).V(1).Info("waiting for children to be deleted", "waiting", res.Waiting)
	}
	return res, errors.Join(errs...)
}

// deleteChild deletes n's child, in its member cluster when it has one, and reports whether it is
// gone. A kept child (KeepOnDelete) in a member cluster the Applier no longer knows counts as released:
// it stays there, as a kept child does, and nothing can reach it to remove the owner's marks; any
// other child there is an error that names the member, and the deletion waits for it.
func deleteChild(ctx context.Context, a *apply.Applier, owner client.Object, n *Node) (apply.DeleteStep, bool, error) {
	ma, err := a.In(n.cluster)
	var unknown *seam.UnknownClusterError
	switch {
	case errors.As(err, &unknown) && n.kept():
		return apply.DeleteStep{}, true, nil
	case err != nil:
		return apply.DeleteStep{}, false, err
	}
	step, err := ma.Delete(ctx, owner, n.obj)
	return step, err == nil && step.Live == nil, err
}

// Prune deletes the children of owner that g no longer declares: objects of the given types that carry
// owner's tracking label and are not a child of g (see apply.Applier.Prune: UID preconditions, each
// child's deletion policy, kept children released). types defaults to g.Types(), which cannot contain
// a kind g no longer declares at all: pass every kind the controller may create (the kinds it owns).
// It returns the objects it deleted.
func (g *Graph) Prune(ctx context.Context, a *apply.Applier, owner client.Object, types ...client.Object) ([]client.Object, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if len(types) == 0 {
		types = g.Types()
	}
	declared := map[string][]client.Object{}
	for _, n := range g.nodes {
		if n.ext == nil {
			declared[n.cluster] = append(declared[n.cluster], n.obj)
		}
	}
	ctx, span := startSpan(ctx, "prune")
	pruned, err := a.Prune(ctx, owner, declared[""], types...)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	// Every member cluster the Applier knows, not only those the graph names: a child the spec moved
	// out of a member is pruned there.
	for _, name := range seam.Of(a).MemberNames() {
		ma, err := a.In(name)
		if err == nil {
			var p []client.Object
			p, err = ma.Prune(ctx, owner, declared[name], types...)
			pruned = append(pruned, p...)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("member cluster %q: %w", name, err))
		}
	}
	err = errors.Join(errs...)
	span.SetAttributes(attrCount.Int(len(pruned)))
	telemetry.EndSpan(span, err)
	return pruned, err
}
