package graph

import (
	"fmt"
	"maps"
	"reflect"

	"github.com/convergo-dev/convergo/internal/marks"
	"github.com/convergo-dev/convergo/reconcile/apply"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KeepOnDelete makes the child outlive its owner, for data that must survive the object (a
// PersistentVolumeClaim, a Secret holding generated credentials): when the owner is deleted, and when
// the graph stops declaring the child, it is released instead of deleted (see
// apply.DeletionPolicyAnnotation), and ordered deletion counts it as done once released, so the children it
// depends on are deleted as usual unless they are kept too. The choice is recorded on the node's object
// as apply.DeletionPolicyAnnotation=keep (on a copy of its annotations map), so it reaches the live child with
// the next apply and a later pruning reads it there; the kept child gets no controller reference, only
// the tracking labels. Deleting the owner honours the stronger of the node's choice and the live
// child's annotation, so a child marked kept is kept even if the owner is deleted before the marked
// version was applied. The last of KeepOnDelete and DeletionPropagation wins.
func (n *Node) KeepOnDelete() *Node {
	n.setDeletionPolicy(marks.PolicyKeep)
	return n
}

// DeletionPropagation sets how the child is deleted when its owner is deleted or it is pruned:
// metav1.DeletePropagationBackground (the default) or metav1.DeletePropagationForeground, with which the
// child's own dependents (a Deployment's ReplicaSets and Pods) are gone before it is, and ordered
// deletion waits for that before it deletes what the child depends on. Foreground relies on the garbage
// collector, which every cluster runs but envtest's bare API server does not.
//
// metav1.DeletePropagationOrphan (or any other value) makes Graph.Validate fail: orphaning the child's
// dependents would leave a Deployment's ReplicaSets and Pods running without owner, which is rarely
// meant, and "orphan the child" is KeepOnDelete. The choice is recorded on the node's object as
// apply.DeletionPolicyAnnotation; the last of KeepOnDelete and DeletionPropagation wins.
func (n *Node) DeletionPropagation(p metav1.DeletionPropagation) *Node {
	switch p {
	case metav1.DeletePropagationBackground:
		n.setDeletionPolicy("")
	case metav1.DeletePropagationForeground:
		n.setDeletionPolicy(marks.PolicyForeground)
	default:
		n.setDeletionPolicy(string(p)) // refused by Validate, by name
	}
	return n
}

// setDeletionPolicy records value as the node object's apply.DeletionPolicyAnnotation (removes it when empty),
// on a copy of the annotations map, which the caller may share between objects.
func (n *Node) setDeletionPolicy(value string) {
	if n.ext != nil {
		n.ext.keep, n.ext.badPolicy = value == marks.PolicyKeep, ""
		if value != "" && value != marks.PolicyKeep {
			n.ext.badPolicy = value
		}
		return
	}
	if n.obj == nil || reflect.ValueOf(n.obj).IsNil() {
		return // Validate reports the missing object
	}
	anns := maps.Clone(n.obj.GetAnnotations())
	if value == "" {
		delete(anns, apply.DeletionPolicyAnnotation)
		if len(anns) == 0 {
			anns = nil
		}
	} else {
		if anns == nil {
			anns = map[string]string{}
		}
		anns[apply.DeletionPolicyAnnotation] = value
	}
	n.obj.SetAnnotations(anns)
}

// checkDeletionPolicy reports an apply.DeletionPolicyAnnotation value on n's object that deletion cannot honour.
func checkDeletionPolicy(n *Node) error {
	v, ok := n.obj.GetAnnotations()[apply.DeletionPolicyAnnotation]
	switch {
	case !ok, v == marks.PolicyKeep, v == marks.PolicyForeground, v == marks.PolicyBackground:
		return nil
	case v == string(metav1.DeletePropagationOrphan):
		return fmt.Errorf("%w: child %q: deletion propagation Orphan is not supported (it would leave the child's own dependents without owner); use KeepOnDelete to keep the child itself", ErrInvalidGraph, n.name)
	}
	return fmt.Errorf("%w: child %q: %s=%q is none of %q, %q, %q", ErrInvalidGraph, n.name, apply.DeletionPolicyAnnotation, v,
		marks.PolicyKeep, marks.PolicyForeground, marks.PolicyBackground)
}

// kept reports whether the node's child is kept (KeepOnDelete, or the annotation on its object).
func (n *Node) kept() bool {
	return n.obj != nil && n.obj.GetAnnotations()[apply.DeletionPolicyAnnotation] == marks.PolicyKeep
}
