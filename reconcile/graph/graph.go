package graph

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/internal/kobj"
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
	// cluster is the member cluster of a cluster child (InCluster); "" for the owner's own.
	cluster string
	// clusterOnExternal: InCluster was called on an external node, which Validate refuses.
	clusterOnExternal bool
}

// InCluster places the node's child in the member cluster name, one of the reconcile.WithMemberClusters
// set (see package member), instead of the owner's own cluster. Everything a child has holds there:
// its intent, the drift check against the member's cache, server-side apply, never taking an object
// another owner holds, DependsOn and ReadyWhen across clusters, pruning, and deletion in order behind
// the owner's finalizer. An owner reference cannot point into another cluster, so the child carries the
// owner's tracking marks instead (ownership.Track). Its namespace defaults to the owner's, which must
// then exist in the member (declare it as a node the others depend on). Validate refuses it on an
// external node.
func (n *Node) InCluster(name string) *Node {
	if n.ext != nil {
		n.clusterOnExternal = true
		return n
	}
	n.cluster = name
	return n
}

// Cluster returns the member cluster of the node's child (InCluster): "" for the owner's own cluster.
func (n *Node) Cluster() string { return n.cluster }

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
			if n.clusterOnExternal {
				return fmt.Errorf("%w: external node %q: InCluster is for cluster children", ErrInvalidGraph, n.name)
			}
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
		if n.cluster != "" {
			id += " in member cluster " + n.cluster
		}
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
