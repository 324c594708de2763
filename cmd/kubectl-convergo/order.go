package main

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/convergo-dev/convergo/internal/marks"
	"github.com/convergo-dev/convergo/internal/telemetry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// childOf describes the live child obj: its node and dependencies from the graph annotations, its
// identity, and its readiness (see judge).
func childOf(obj *unstructured.Unstructured) Child {
	annotations := obj.GetAnnotations()
	c := Child{
		Node:       annotations[marks.Node],
		APIVersion: obj.GetAPIVersion(),
		Kind:       obj.GetKind(),
		Namespace:  obj.GetNamespace(),
		Name:       obj.GetName(),
	}
	for d := range strings.SplitSeq(annotations[marks.DependsOn], ",") {
		if d = strings.TrimSpace(d); d != "" {
			c.DependsOn = append(c.DependsOn, d)
		}
	}
	c.Ready, c.Check, c.Reason = judge(obj)
	c.Written = lastApply(obj)
	c.WrittenFor = annotations[telemetry.WrittenForAnnotation]
	return c
}

// lastApply returns the latest server-side apply recorded in obj's managedFields, nil when none is.
func lastApply(obj *unstructured.Unstructured) *Write {
	var last *Write
	for _, e := range obj.GetManagedFields() {
		if e.Operation != metav1.ManagedFieldsOperationApply || e.Time == nil {
			continue
		}
		if last == nil || e.Time.After(last.Time) {
			last = &Write{Manager: e.Manager, Time: e.Time.UTC()}
		}
	}
	return last
}

// inGraphOrder returns the children in the order of their graph: layer by layer as Graph.Layers
// groups them (a node's layer is one more than its deepest dependency's), by node name within a
// layer, then the children that record no node, by cluster (the owner's first), kind, namespace and
// name. Node names are unique across the clusters of a graph, so a member cluster's children take
// their places among the others'. A dependency no child records is ignored, and so is the edge that
// closes a cycle (the annotations were edited), found walking from the nodes in name order. Children
// that record the same node (an old object and its replacement) keep to their node's place.
func inGraphOrder(children []Child) []Child {
	deps := map[string][]string{}
	for _, c := range children {
		if c.Node != "" {
			deps[c.Node] = append(deps[c.Node], c.DependsOn...)
		}
	}
	depth := map[string]int{}
	visiting := map[string]bool{}
	var depthOf func(node string) int
	depthOf = func(node string) int {
		if d, ok := depth[node]; ok {
			return d
		}
		visiting[node] = true
		d := 0
		for _, dep := range deps[node] {
			if _, known := deps[dep]; known && !visiting[dep] {
				d = max(d, depthOf(dep)+1)
			}
		}
		visiting[node] = false
		depth[node] = d
		return d
	}
	for _, node := range slices.Sorted(maps.Keys(deps)) { // by name, so that a cycle breaks the same way every time
		depthOf(node)
	}
	out := slices.Clone(children)
	slices.SortStableFunc(out, func(a, b Child) int {
		if (a.Node == "") != (b.Node == "") {
			if a.Node == "" {
				return 1
			}
			return -1
		}
		if a.Node != "" {
			if c := cmp.Compare(depthOf(a.Node), depthOf(b.Node)); c != 0 {
				return c
			}
		}
		return cmp.Or(
			cmp.Compare(a.Node, b.Node),
			cmp.Compare(a.Cluster, b.Cluster),
			cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.APIVersion, b.APIVersion),
		)
	})
	return out
}
