package graph

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/convergo-dev/convergo/internal/marks"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Graph annotations. Graph.Apply writes them on every child it applies, beside the tracking labels of
// package ownership, so that tools reading only live objects can tell which node of its owner's graph a
// child is and in which order the graph runs (kubectl convergo tree, in cmd/kubectl-convergo).
// They are part of the child's intent: they change only when the graph's shape does.

// annotated returns a copy of the node's object carrying marks.Node and, when the node has
// dependencies, marks.DependsOn (any value of its own for them is replaced).
func (n *Node) annotated() (client.Object, error) {
	obj, ok := n.obj.DeepCopyObject().(client.Object)
	if !ok {
		return nil, fmt.Errorf("copy of %T is a %T, not a client.Object: generate DeepCopyObject for the type", n.obj, n.obj.DeepCopyObject())
	}
	annotations := maps.Clone(obj.GetAnnotations())
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[marks.Node] = n.name
	delete(annotations, marks.DependsOn)
	if deps := n.dependsOnMark(); deps != "" {
		annotations[marks.DependsOn] = deps
	}
	obj.SetAnnotations(annotations)
	return obj, nil
}

// dependsOnMark returns the node's dependencies as marks.DependsOn holds them: sorted,
// comma-separated; empty when it has none.
func (n *Node) dependsOnMark() string {
	return strings.Join(slices.Sorted(slices.Values(n.deps)), ",")
}
