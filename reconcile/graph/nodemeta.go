package graph

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Graph annotations. Graph.Apply writes them on every child it applies, beside the tracking labels of
// package ownership, so that tools reading only live objects can tell which node of its owner's graph a
// child is and in which order the graph runs (kubectl convergo tree, in cmd/kubectl-convergo).
// They are part of the child's intent: they change only when the graph's shape does.
const (
	// NodeAnnotation holds the name of the child's node in its owner's Graph (the name given to
	// Graph.Add).
	NodeAnnotation = "convergo.dev/node"
	// DependsOnAnnotation holds the names of the nodes the child's node depends on (DependsOn and
	// DependsOnForCreation), sorted and separated by commas; it is absent for a node without
	// dependencies. Node names that contain a comma read as two names here.
	DependsOnAnnotation = "convergo.dev/depends-on"
)

// annotated returns a copy of the node's object carrying NodeAnnotation and, when the node has
// dependencies, DependsOnAnnotation (any value of its own for them is replaced).
func (n *Node) annotated() (client.Object, error) {
	obj, ok := n.obj.DeepCopyObject().(client.Object)
	if !ok {
		return nil, fmt.Errorf("copy of %T is a %T, not a client.Object: generate DeepCopyObject for the type", n.obj, n.obj.DeepCopyObject())
	}
	annotations := maps.Clone(obj.GetAnnotations())
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[NodeAnnotation] = n.name
	delete(annotations, DependsOnAnnotation)
	if deps := n.dependsOnMark(); deps != "" {
		annotations[DependsOnAnnotation] = deps
	}
	obj.SetAnnotations(annotations)
	return obj, nil
}

// dependsOnMark returns the node's dependencies as DependsOnAnnotation holds them: sorted,
// comma-separated; empty when it has none.
func (n *Node) dependsOnMark() string {
	return strings.Join(slices.Sorted(slices.Values(n.deps)), ",")
}
