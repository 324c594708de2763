package graph

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/reconcile/apply"
)

// ChildResult is what Graph.Apply did with one child.
type ChildResult struct {
	// Name is the child's name in the graph.
	Name string
	// Object is the live child after apply, or nil if it was not applied.
	Object client.Object
	// Operation is what Apply did; empty when the child was not applied.
	Operation apply.Operation
	// Applied is false when the child waits for its dependencies (or is being deleted).
	Applied bool
	// Ready is the child's ReadyWhen verdict (true for an applied child without check).
	Ready bool
	// Reason explains why the child is not ready.
	Reason string
}

// Result is the outcome of Graph.Apply.
type Result struct {
	// Children holds one result per child reached, in topological order.
	Children []ChildResult
	// Waiting says, in topological order, what the graph is waiting for: "deployment waits for
	// config: <reason>" for a child held back by a dependency, "config: <reason>" for an applied
	// child that is not ready.
	Waiting []string
	// Ready is true when every child is applied and ready.
	Ready bool
	// ObserveAgain is when the external nodes this Apply observed ask to be observed again: the
	// shortest interval among them (see Node.ObserveEvery), shorter for one that is not ready. Zero
	// when the graph has no external node that was observed; no watch event announces their changes,
	// so a caller requeues the owner after it (the Reconciler does, jittered).
	ObserveAgain time.Duration
}

// Child returns the result of the named child, or nil.
func (r *Result) Child(name string) *ChildResult {
	for i := range r.Children {
		if r.Children[i].Name == name {
			return &r.Children[i]
		}
	}
	return nil
}

// Live returns the live object of the child called name, as its type T, after Apply: false when r has
// no such child, the child was not applied, or it is not a T.
//
//	if d, ok := graph.Live[*appsv1.Deployment](res, "deployment"); ok {
//		mc.Status.ReadyReplicas = d.Status.ReadyReplicas
//	}
func Live[T client.Object](r *Result, name string) (T, bool) {
	var zero T
	if r == nil {
		return zero, false
	}
	c := r.Child(name)
	if c == nil || c.Object == nil {
		return zero, false
	}
	obj, ok := c.Object.(T)
	return obj, ok
}

// Changed reports whether any child was created, updated or recreated.
func (r *Result) Changed() bool {
	for _, c := range r.Children {
		if c.Operation == apply.OperationCreated || c.Operation == apply.OperationUpdated || c.Operation == apply.OperationRecreated {
			return true
		}
	}
	return false
}

// maxParallelApplies bounds how many children Graph.Apply and Graph.Delete send at once.
const maxParallelApplies = 8

// Apply applies the children owned by owner, each as soon as its own dependencies are applied and
// ready (at most 8 at a time): children that do not depend on each other are applied concurrently, so
// a reconcile takes one round trip per step of the longest dependency chain, and a slow child holds
// back only the children that depend on it. A child whose dependencies are not all ready is skipped
// (Applied=false) and listed in Waiting. After an error no further child is started; the error names
// the child (errors of children applied at the same time are joined), and the result is returned with
// it. A child being deleted (apply.ErrTerminating) is not an error: it is reported not applied and not
// ready. Children and Waiting are in topological order (see Order) whatever the order of the
// requests. Each child carries its node's name and dependencies in the annotations marks.Node and
// marks.DependsOn.
func (g *Graph) Apply(ctx context.Context, a *apply.Applier, owner client.Object) (*Result, error) {
	order, deps, err := g.ordered()
	if err != nil {
		return nil, err
	}
	var (
		results = make([]ChildResult, len(order))
		waiting = make([][]string, len(order))
		errs    = make([]error, len(order))
		failed  atomic.Bool
		rec     = newRecord(a, owner)
	)
	inDependencyOrder(deps, func(i int) { // results[j] of each dependency j is final
		n := g.index[order[i]]
		results[i].Name = n.name
		exists := sync.OnceValue(func() bool { return g.exists(ctx, a, owner, n) })
		for k, d := range n.deps {
			if dr := results[deps[i][k]]; !dr.Ready && !(n.creationOnly[d] && exists()) {
				results[i].Reason = fmt.Sprintf("waiting for %s", d)
				waiting[i] = append(waiting[i], fmt.Sprintf("%s waits for %s: %s", n.name, d, dr.Reason))
			}
		}
		switch {
		case results[i].Reason != "":
		case failed.Load():
			results[i].Reason = "not applied: applying another child failed"
		case n.ext != nil:
			ctx, span := startSpan(ctx, "apply "+n.name, attrNode.String(n.name), attrKind.String(n.ext.ops.kind), attrID.String(n.ext.id))
			results[i], waiting[i], errs[i] = g.applyExternal(ctx, rec, n)
			endChildSpan(span, results[i], errs[i])
		default:
			ctx, span := startSpan(ctx, "apply "+n.name, attrNode.String(n.name))
			results[i], waiting[i], errs[i] = applyChild(ctx, a, owner, n)
			endChildSpan(span, results[i], errs[i])
		}
		if errs[i] != nil {
			failed.Store(true)
		}
	})
	res := &Result{Ready: true, Children: results}
	for i, cr := range results {
		res.Waiting = append(res.Waiting, waiting[i]...)
		if !cr.Ready {
			res.Ready = false
		}
		if n := g.index[cr.Name]; n.ext != nil && (cr.Applied || errs[i] != nil) {
			if d := n.ext.observeAgain(cr.Ready); res.ObserveAgain == 0 || d < res.ObserveAgain {
				res.ObserveAgain = d
			}
		}
	}
	return res, errors.Join(errs...)
}

// exists reports whether n's object exists (for a creation-only dependency): the Applier's answer
// for a cluster child, Observe's for an external node (an error counts as missing).
func (g *Graph) exists(ctx context.Context, a *apply.Applier, owner client.Object, n *Node) bool {
	if n.ext == nil {
		ma, err := a.In(n.cluster)
		return err == nil && ma.Exists(ctx, owner, n.obj)
	}
	obs, err := n.ext.ops.observe(ctx, n.ext.id)
	return err == nil && obs.Exists
}

// ordered returns the children in topological order (see Order) and, for each, the positions in that
// order of its dependencies, in declaration order.
func (g *Graph) ordered() (order []string, deps [][]int, err error) {
	order, err = g.Order()
	if err != nil {
		return nil, nil, err
	}
	pos := make(map[string]int, len(order))
	for i, name := range order {
		pos[name] = i
	}
	deps = make([][]int, len(order))
	for i, name := range order {
		for _, d := range g.index[name].deps {
			deps[i] = append(deps[i], pos[d])
		}
	}
	return order, deps, nil
}

// inDependencyOrder calls step(i) for every child concurrently, at most maxParallelApplies at a time,
// each once step has returned for every child in after[i] (its dependencies when applying, the
// children depending on it when deleting), and returns when all calls returned. after holds no cycle.
//
// The calling goroutine runs steps itself, and a goroutine whose step made others ready goes on with
// one of them: a goroutine is started only for a step that can run beside another. Most steps of a
// converged owner only read the cache, and a new goroutine's stack grew, by copying, on the way down
// its first step: 4% of a restarted manager's CPU when every step had a goroutine of its own.
func inDependencyOrder(after [][]int, step func(i int)) {
	pending := make([]int, len(after))
	dependents := make([][]int, len(after))
	var roots []int
	for i, deps := range after {
		pending[i] = len(deps)
		for _, j := range deps {
			dependents[j] = append(dependents[j], i)
		}
		if len(deps) == 0 {
			roots = append(roots, i)
		}
	}
	if len(roots) == 0 {
		return
	}
	slots := make(chan struct{}, maxParallelApplies)
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		run func(i int)
	)
	run = func(i int) {
		for {
			slots <- struct{}{}
			step(i)
			<-slots
			var next []int
			mu.Lock()
			for _, d := range dependents[i] {
				if pending[d]--; pending[d] == 0 {
					next = append(next, d)
				}
			}
			mu.Unlock()
			if len(next) == 0 {
				return
			}
			for _, d := range next[1:] {
				wg.Go(func() { run(d) })
			}
			i = next[0]
		}
	}
	for _, r := range roots[1:] {
		wg.Go(func() { run(r) })
	}
	run(roots[0])
	wg.Wait()
}

// applyChild applies one child whose dependencies are ready and judges its readiness; waiting holds
// what the child waits for, if anything.
func applyChild(ctx context.Context, a *apply.Applier, owner client.Object, n *Node) (cr ChildResult, waiting []string, err error) {
	cr.Name = n.name
	obj, err := n.annotated()
	if err != nil {
		cr.Reason = "apply failed"
		return cr, nil, nodeError(n.name, StepApply, fmt.Errorf("child %q: %w", n.name, err))
	}
	a, err = a.In(n.cluster)
	if err != nil {
		cr.Reason = "apply failed"
		return cr, nil, nodeError(n.name, StepApply, fmt.Errorf("child %q: %w", n.name, err))
	}
	live, op, err := a.Apply(ctx, owner, obj)
	switch {
	case errors.Is(err, apply.ErrTerminating):
		cr.Reason = "being deleted; it is created again once it is gone"
		return cr, []string{fmt.Sprintf("%s: %s", n.name, cr.Reason)}, nil
	case err != nil:
		cr.Reason = "apply failed"
		return cr, nil, nodeError(n.name, StepApply, fmt.Errorf("child %q%s: %w", n.name, inMember(n.cluster), err))
	}
	cr.Applied, cr.Operation, cr.Object = true, op, live
	switch {
	case live == nil:
		cr.Reason = "being recreated"
	case n.ready == nil:
		cr.Ready = true
	default:
		cr.Ready, cr.Reason = n.ready(live)
		if cr.Ready {
			cr.Reason = ""
		} else if cr.Reason == "" {
			cr.Reason = "not ready"
		}
	}
	if !cr.Ready {
		waiting = []string{fmt.Sprintf("%s: %s", n.name, cr.Reason)}
	}
	return cr, waiting, nil
}

// inMember names the member cluster of a child in messages: "" for the owner's own cluster.
func inMember(cluster string) string {
	if cluster == "" {
		return ""
	}
	return fmt.Sprintf(" in member cluster %q", cluster)
}
