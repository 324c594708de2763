package reconcile

import (
	"fmt"
	"maps"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DeletionPolicyAnnotation records on a child how it goes when its owner is deleted or when the graph
// no longer declares it (pruning). Node.KeepOnDelete and Node.DeletionPropagation set it on the node's
// object, so it reaches the live child with the next apply; a child applied with Applier.Apply may
// carry it directly. Deletion reads it from the live child, since a pruned child has no node any more:
//
//   - DeletionPolicyKeep: the child outlives its owner. On the owner's deletion, and when pruned, it is
//     released instead of deleted: any owner reference to the owner and the tracking labels and
//     annotations of package ownership are removed, so that neither the garbage collector nor a later
//     owner of the same name touches it (a new owner, or the same one declaring the child again, finds
//     an orphan: an *OrphanError, adopted only with WithAdoptOrphans). A kept child carries no controller reference while it is owned either, only the
//     tracking labels: the garbage collector never deletes it, even when the owner is deleted with
//     foreground propagation (which deletes dependents before any finalizer of the owner runs) or its
//     finalizer is removed by hand. Nor is it ever recreated: with WithRecreateOnImmutable, a change to
//     one of its immutable fields stays an *ImmutableFieldError.
//   - DeletionPolicyForeground: the child is deleted with foreground propagation: its own dependents (a
//     Deployment's ReplicaSets and their Pods) are gone before it is, so ordered deletion deletes what it
//     depends on only after them. The garbage collector (kube-controller-manager) does this work; a bare
//     API server without it (envtest) never removes such a child.
//   - absent, or DeletionPolicyBackground: the default, background propagation: the child goes at once
//     and the garbage collector removes its dependents afterwards.
//
// Any other value makes Graph.Validate fail.
const DeletionPolicyAnnotation = "convergo.dev/deletion-policy"

// Values of DeletionPolicyAnnotation.
const (
	// DeletionPolicyKeep keeps the child when its owner is deleted or the child is pruned (released).
	DeletionPolicyKeep = "keep"
	// DeletionPolicyForeground deletes the child with foreground propagation.
	DeletionPolicyForeground = "foreground"
	// DeletionPolicyBackground deletes the child with background propagation, as without the annotation.
	DeletionPolicyBackground = "background"
)

// deletionPolicy is how one child goes; a greater value is the stronger choice.
type deletionPolicy int

const (
	policyBackground deletionPolicy = iota
	policyForeground
	policyKeep
)

// policyOf returns the deletion policy obj's annotation records (background when absent or unknown).
func policyOf(obj client.Object) deletionPolicy {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return policyBackground
	}
	switch obj.GetAnnotations()[DeletionPolicyAnnotation] {
	case DeletionPolicyKeep:
		return policyKeep
	case DeletionPolicyForeground:
		return policyForeground
	}
	return policyBackground
}

// or returns the stronger of p and q: keep over foreground over background.
func (p deletionPolicy) or(q deletionPolicy) deletionPolicy { return max(p, q) }

// propagation returns the DELETE's propagation policy (keep is never deleted).
func (p deletionPolicy) propagation() metav1.DeletionPropagation {
	if p == policyForeground {
		return metav1.DeletePropagationForeground
	}
	return metav1.DeletePropagationBackground
}

// KeepOnDelete makes the child outlive its owner, for data that must survive the object (a
// PersistentVolumeClaim, a Secret holding generated credentials): when the owner is deleted, and when
// the graph stops declaring the child, it is released instead of deleted (see
// DeletionPolicyAnnotation), and ordered deletion counts it as done once released, so the children it
// depends on are deleted as usual unless they are kept too. The choice is recorded on the node's object
// as DeletionPolicyAnnotation=keep (on a copy of its annotations map), so it reaches the live child with
// the next apply and a later pruning reads it there; the kept child gets no controller reference, only
// the tracking labels. Deleting the owner honours the stronger of the node's choice and the live
// child's annotation, so a child marked kept is kept even if the owner is deleted before the marked
// version was applied. The last of KeepOnDelete and DeletionPropagation wins.
func (n *Node) KeepOnDelete() *Node {
	n.setDeletionPolicy(DeletionPolicyKeep)
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
// DeletionPolicyAnnotation; the last of KeepOnDelete and DeletionPropagation wins.
func (n *Node) DeletionPropagation(p metav1.DeletionPropagation) *Node {
	switch p {
	case metav1.DeletePropagationBackground:
		n.setDeletionPolicy("")
	case metav1.DeletePropagationForeground:
		n.setDeletionPolicy(DeletionPolicyForeground)
	default:
		n.setDeletionPolicy(string(p)) // refused by Validate, by name
	}
	return n
}

// setDeletionPolicy records value as the node object's DeletionPolicyAnnotation (removes it when empty),
// on a copy of the annotations map, which the caller may share between objects.
func (n *Node) setDeletionPolicy(value string) {
	if n.obj == nil || reflect.ValueOf(n.obj).IsNil() {
		return // Validate reports the missing object
	}
	anns := maps.Clone(n.obj.GetAnnotations())
	if value == "" {
		delete(anns, DeletionPolicyAnnotation)
		if len(anns) == 0 {
			anns = nil
		}
	} else {
		if anns == nil {
			anns = map[string]string{}
		}
		anns[DeletionPolicyAnnotation] = value
	}
	n.obj.SetAnnotations(anns)
}

// checkDeletionPolicy reports a DeletionPolicyAnnotation value on n's object that deletion cannot honour.
func checkDeletionPolicy(n *Node) error {
	v, ok := n.obj.GetAnnotations()[DeletionPolicyAnnotation]
	switch {
	case !ok, v == DeletionPolicyKeep, v == DeletionPolicyForeground, v == DeletionPolicyBackground:
		return nil
	case v == string(metav1.DeletePropagationOrphan):
		return fmt.Errorf("%w: child %q: deletion propagation Orphan is not supported (it would leave the child's own dependents without owner); use KeepOnDelete to keep the child itself", ErrInvalidGraph, n.name)
	}
	return fmt.Errorf("%w: child %q: %s=%q is none of %q, %q, %q", ErrInvalidGraph, n.name, DeletionPolicyAnnotation, v,
		DeletionPolicyKeep, DeletionPolicyForeground, DeletionPolicyBackground)
}
