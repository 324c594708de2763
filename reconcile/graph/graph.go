package graph

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/convergo-dev/convergo/internal/kobj"
	"github.com/convergo-dev/convergo/reconcile/apply"
)

// ErrInvalidGraph is wrapped by every error of Graph.Validate (duplicate or empty names, unknown
// dependencies, cycles, missing objects). It is a programming error, not a transient one.
var ErrInvalidGraph = errors.New("invalid child graph")

// ReadyCheck tells whether a live child is ready, and why not. Builders' readiness checks
// (builders.DeploymentAvailable...) have this signature.
type ReadyCheck func(live client.Object) (ready bool, reason string)

// Graph is a set of named children with dependencies. Apply creates and updates them in dependency
// order, applying a child only when all its dependencies are ready (children that do not depend on
// each other concurrently); Delete removes them in reverse order, each once the children depending on
// it are gone. Build a new Graph on every reconcile from the owner's spec.
type Graph struct {
	nodes []*Node
	index map[string]*Node
	errs  []error
	cfg   config
	// impliedFor is how many nodes the graph had when addImplied last read their references.
	impliedFor int
}

// Node is one named child of a Graph.
type Node struct {
	name  string
	obj   client.Object
	deps  []string
	ready ReadyCheck
	// creationOnly holds the dependencies that gate only the node's creation (DependsOnForCreation).
	creationOnly map[string]bool
	// ext is set for an external node (AddExternal); obj is then nil.
	ext *externalNode
	// adoptOnChild: AdoptExisting was called on a cluster child, which Validate refuses.
	adoptOnChild bool
}

// Name returns the node's name.
func (n *Node) Name() string { return n.name }

// Object returns the node's desired object (nil for an external node).
func (n *Node) Object() client.Object { return n.obj }

// Readiness returns the node's ReadyWhen check (nil when it has none: ready once it exists).
func (n *Node) Readiness() ReadyCheck { return n.ready }

// Dependencies returns the names this node depends on, in declaration order.
func (n *Node) Dependencies() []string { return append([]string(nil), n.deps...) }

// DependsOn declares that the node is applied, created or changed, only once every named child is
// applied and ready, and that on deletion the named children are deleted only after this node is gone.
// Use it where a change must wait, e.g. a Deployment whose new version needs a migration Job to have
// completed. The last declaration of an edge wins.
func (n *Node) DependsOn(names ...string) *Node {
	for _, name := range names {
		if !slices.Contains(n.deps, name) {
			n.deps = append(n.deps, name)
		}
		delete(n.creationOnly, name)
	}
	return n
}

// DependsOnForCreation declares that the node is created only once every named child is applied and
// ready, while its later changes are applied without waiting for them; deletion order is DependsOn's.
// Use it where only the first start needs the dependency, e.g. a Service in front of a Deployment: a
// change to the Service need not wait for a rollout, and the conditions then name the rollout, not
// the Service, as what is in progress. The last declaration of an edge wins.
func (n *Node) DependsOnForCreation(names ...string) *Node {
	n.DependsOn(names...)
	if n.creationOnly == nil {
		n.creationOnly = map[string]bool{}
	}
	for _, name := range names {
		n.creationOnly[name] = true
	}
	return n
}

// ReadyWhen sets the readiness check of the node's live object. A node without one is ready as
// soon as it is applied.
func (n *Node) ReadyWhen(check ReadyCheck) *Node {
	n.ready = check
	return n
}

// New returns an empty Graph.
func New(opts ...Option) *Graph {
	g := &Graph{index: map[string]*Node{}}
	for _, o := range opts {
		o(&g.cfg)
	}
	return g
}

// Add declares the child name with its desired object (typed, holding only what the operator
// cares about; see Applier.Apply). Problems (empty or duplicate name, nil object) are reported by
// Validate.
func (g *Graph) Add(name string, obj client.Object) *Node {
	if g.index == nil {
		g.index = map[string]*Node{}
	}
	n := &Node{name: name, obj: obj}
	switch {
	case name == "":
		g.errs = append(g.errs, fmt.Errorf("%w: a child has an empty name", ErrInvalidGraph))
		return n
	case g.index[name] != nil:
		g.errs = append(g.errs, fmt.Errorf("%w: duplicate child name %q", ErrInvalidGraph, name))
		return n
	}
	g.nodes = append(g.nodes, n)
	g.index[name] = n
	return n
}

// Node returns the node of that name, or nil.
func (g *Graph) Node(name string) *Node { return g.index[name] }

// Nodes returns the declared nodes in declaration order.
func (g *Graph) Nodes() []*Node { return append([]*Node(nil), g.nodes...) }

// Validate reports the first problem of the graph, deterministically: an empty or duplicate name,
// a nil object, a deletion policy deletion cannot honour (see DeletionPropagation), two children for
// the same object, an unknown dependency, or a cycle (named by its path, "a -> b -> a"). Every such
// error wraps ErrInvalidGraph.
//
// A valid graph then gets the dependencies its children's specs state, unless New was given
// WithoutImpliedDependencies: a workload (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob,
// Pod) depends on the ConfigMaps, Secrets and PersistentVolumeClaims its pod template mounts, takes
// environment variables from or pulls images with, on its ServiceAccount and on the RoleBindings and
// ClusterRoleBindings that bind a role to that ServiceAccount; a binding depends on its role and its
// ServiceAccounts. Each such edge is added as DependsOnForCreation would add it (the referenced child
// exists before the workload is created, and goes after it on deletion; later changes do not wait),
// only between children of the graph, where no edge was declared, and never where it would close a
// cycle. Apply, Delete, Order and Layers call Validate, so they follow these edges too.
func (g *Graph) Validate() error {
	if len(g.errs) > 0 {
		return g.errs[0]
	}
	seen := map[string]string{}
	for _, n := range g.nodes {
		if n.ext != nil {
			if err := validateExternal(n); err != nil {
				return err
			}
			id := fmt.Sprintf("external %s %s", n.ext.ops.kind, n.ext.id)
			if other, dup := seen[id]; dup {
				return fmt.Errorf("%w: children %q and %q declare the same object %s", ErrInvalidGraph, other, n.name, id)
			}
			seen[id] = n.name
			continue
		}
		if n.adoptOnChild {
			return fmt.Errorf("%w: child %q: AdoptExisting is for external nodes; a cluster child is adopted with apply.WithAdoptOrphans", ErrInvalidGraph, n.name)
		}
		if n.obj == nil || reflect.ValueOf(n.obj).IsNil() {
			return fmt.Errorf("%w: child %q has no object", ErrInvalidGraph, n.name)
		}
		if err := checkDeletionPolicy(n); err != nil {
			return err
		}
		id := objectIdentity(n.obj)
		if other, dup := seen[id]; dup {
			return fmt.Errorf("%w: children %q and %q declare the same object %s", ErrInvalidGraph, other, n.name, id)
		}
		seen[id] = n.name
	}
	for _, n := range g.nodes {
		for _, d := range n.deps {
			if g.index[d] == nil {
				return fmt.Errorf("%w: child %q depends on unknown child %q", ErrInvalidGraph, n.name, d)
			}
		}
	}
	if cycle := g.findCycle(); cycle != nil {
		return fmt.Errorf("%w: dependency cycle %s", ErrInvalidGraph, strings.Join(cycle, " -> "))
	}
	g.addImplied()
	return nil
}

// objectIdentity distinguishes desired objects by Go type (or GVK for unstructured), namespace and
// name. Namespaces are compared as declared.
func objectIdentity(obj client.Object) string {
	t := reflect.TypeOf(obj).String()
	if u, ok := obj.(*unstructured.Unstructured); ok {
		t = u.GroupVersionKind().String()
	}
	return fmt.Sprintf("%s %s/%s", t, obj.GetNamespace(), obj.GetName())
}

// findCycle returns the first cycle found by a depth-first search in declaration order, as the
// path of names from its first node back to it, or nil.
func (g *Graph) findCycle() []string {
	const (
		unvisited = iota
		active
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(name string) []string
	visit = func(name string) []string {
		state[name] = active
		stack = append(stack, name)
		for _, d := range g.index[name].deps {
			switch state[d] {
			case active:
				start := 0
				for i, s := range stack {
					if s == d {
						start = i
					}
				}
				return append(append([]string(nil), stack[start:]...), d)
			case unvisited:
				if c := visit(d); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[name] = done
		return nil
	}
	for _, n := range g.nodes {
		if state[n.name] == unvisited {
			if c := visit(n.name); c != nil {
				return c
			}
		}
	}
	return nil
}

// Layers groups the children by depth: layer 0 holds the children without dependencies, layer k
// those whose deepest dependency is in layer k-1. Within a layer, children keep declaration order.
// The graph must be valid.
func (g *Graph) Layers() ([][]string, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	depth := map[string]int{}
	var depthOf func(name string) int
	depthOf = func(name string) int {
		if d, ok := depth[name]; ok {
			return d
		}
		d := 0
		for _, dep := range g.index[name].deps {
			d = max(d, depthOf(dep)+1)
		}
		depth[name] = d
		return d
	}
	var layers [][]string
	for _, n := range g.nodes {
		d := depthOf(n.name)
		for len(layers) <= d {
			layers = append(layers, nil)
		}
		layers[d] = append(layers[d], n.name)
	}
	return layers, nil
}

// Order returns the children in topological order: the layers in sequence, declaration order
// within each. It is deterministic.
func (g *Graph) Order() ([]string, error) {
	layers, err := g.Layers()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range layers {
		out = append(out, l...)
	}
	return out, nil
}

// Types returns one empty object per distinct child type declared, in declaration order. Use it
// (plus the types a graph may no longer declare) for watches and Prune.
func (g *Graph) Types() []client.Object {
	samples := g.typeSamples()
	out := make([]client.Object, len(samples))
	for i, s := range samples {
		out[i] = kobj.New(s)
	}
	return out
}

// typeSamples returns the first declared child of each distinct child type, in declaration order:
// Types without an empty object made per type, for callers that only need to know the types. The
// children are the graph's own: read their types, never their content.
func (g *Graph) typeSamples() []client.Object {
	var out []client.Object
	seen := map[string]bool{}
	for _, n := range g.nodes {
		if n.obj == nil || reflect.ValueOf(n.obj).IsNil() {
			continue
		}
		t := typeIdentity(n.obj)
		if seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, n.obj)
	}
	return out
}

func typeIdentity(obj client.Object) string {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.GroupVersionKind().String()
	}
	return reflect.TypeOf(obj).String()
}

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
// requests. Each child carries its node's name and dependencies in the annotations NodeAnnotation and
// DependsOnAnnotation.
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
			results[i], waiting[i], errs[i] = g.applyExternal(ctx, rec, n)
		default:
			results[i], waiting[i], errs[i] = applyChild(ctx, a, owner, n)
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
		return a.Exists(ctx, owner, n.obj)
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
	live, op, err := a.Apply(ctx, owner, obj)
	switch {
	case errors.Is(err, apply.ErrTerminating):
		cr.Reason = "being deleted; it is created again once it is gone"
		return cr, []string{fmt.Sprintf("%s: %s", n.name, cr.Reason)}, nil
	case err != nil:
		cr.Reason = "apply failed"
		return cr, nil, nodeError(n.name, StepApply, fmt.Errorf("child %q: %w", n.name, err))
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

// DeleteResult is what one deletion pass did: Graph.Delete or Applier.DeleteOwned.
type DeleteResult struct {
	// Done is true when none of the children exists any more.
	Done bool
	// Deleted lists, in reverse topological order, the children whose deletion this pass sent: Operation is
	// apply.OperationDeleted and Object the live object as read before the deletion. A child already being
	// deleted (or found gone by the API server) is not listed. Name is the child's name in the graph,
	// empty for a child found by its tracking label only (DeleteOwned).
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
		if e := g.index[order[i]].ext; e != nil {
			if gone[i], errs[i] = deleteExternal(ctx, rec, e.ops, e.id, e.keep); errs[i] != nil {
				errs[i] = nodeError(order[i], StepDelete, fmt.Errorf("delete external node %q (%s %s): %w", order[i], e.ops.kind, e.id, errs[i]))
			}
			return
		}
		steps[i], errs[i] = a.Delete(ctx, owner, g.index[order[i]].obj)
		if errs[i] != nil {
			errs[i] = nodeError(order[i], StepDelete, fmt.Errorf("delete child %q: %w", order[i], errs[i]))
			return
		}
		gone[i] = steps[i].Live == nil
	})
	res := &DeleteResult{Done: true}
	for i := len(order) - 1; i >= 0; i-- {
		if steps[i].Sent != nil {
			res.Deleted = append(res.Deleted, ChildResult{Name: order[i], Object: steps[i].Sent, Operation: apply.OperationDeleted})
		}
		if steps[i].Live != nil && errs[i] == nil {
			res.Waiting = append(res.Waiting, order[i]+": "+a.Describe(steps[i].Live))
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
	var declared []client.Object
	for _, n := range g.nodes {
		if n.ext == nil {
			declared = append(declared, n.obj)
		}
	}
	return a.Prune(ctx, owner, declared, types...)
}
