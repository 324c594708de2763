package graph

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Mermaid renders the graph as a Mermaid flowchart: one box per child ("name<br/>Kind", a cylinder for
// an external node with its External's kind), an arrow from
// each child to the children that depend on it, so the diagram reads in apply order (deletion runs it
// backwards). scheme names the kinds of typed objects (nil: the kinds set on the objects). Paste it in
// a ```mermaid block of your docs.
func (g *Graph) Mermaid(scheme *runtime.Scheme) string {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	id := make(map[string]int, len(g.nodes)) // node ids by position: any child name is safe
	for i, n := range g.nodes {
		id[n.name] = i
		open, end := "[", "]"
		if n.ext != nil {
			open, end = "[(", ")]" // a cylinder: outside the cluster
		}
		fmt.Fprintf(&b, "  c%d%s\"%s<br/>%s\"%s\n", i, open, strings.ReplaceAll(n.name, `"`, "#quot;"), kindName(n, scheme), end)
	}
	for i, n := range g.nodes {
		for _, d := range n.deps {
			if j, ok := id[d]; ok {
				fmt.Fprintf(&b, "  c%d --> c%d\n", j, i)
			}
		}
	}
	return b.String()
}

// DOT renders the graph in Graphviz's DOT language, with the same boxes and arrows as Mermaid
// (`dot -Tsvg`).
func (g *Graph) DOT(scheme *runtime.Scheme) string {
	var b strings.Builder
	b.WriteString("digraph children {\n  rankdir=LR;\n  node [shape=box];\n")
	for _, n := range g.nodes {
		shape := ""
		if n.ext != nil {
			shape = ", shape=cylinder" // outside the cluster
		}
		fmt.Fprintf(&b, "  %q [label=%q%s];\n", n.name, n.name+"\n"+kindName(n, scheme), shape)
	}
	for _, n := range g.nodes {
		for _, d := range n.deps {
			fmt.Fprintf(&b, "  %q -> %q;\n", d, n.name)
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// kindName is the node's kind: from its object's TypeMeta, else from scheme, else its Go type's name.
func kindName(n *Node, scheme *runtime.Scheme) string {
	if n.ext != nil {
		return n.ext.ops.kind
	}
	if k := n.obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	if scheme != nil {
		if gvk, err := apiutil.GVKForObject(n.obj, scheme); err == nil {
			return gvk.Kind
		}
	}
	t := reflect.TypeOf(n.obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}
