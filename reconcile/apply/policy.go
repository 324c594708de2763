package apply

import (
	"reflect"

	"github.com/convergo-dev/convergo/internal/marks"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DeletionPolicyAnnotation records on a child how it goes when its owner is deleted or when the graph
// no longer declares it (pruning). Node.KeepOnDelete and Node.DeletionPropagation set it on the node's
// object, so it reaches the live child with the next apply; a child applied with Applier.Apply may
// carry it directly. Deletion reads it from the live child, since a pruned child has no node any more:
//
//   - "keep": the child outlives its owner. On the owner's deletion, and when pruned, it is
//     released instead of deleted: any owner reference to the owner and every label and annotation
//     of Convergo's (keys under convergo.dev/: the tracking marks of package ownership, the intent hash,
//     the node annotations, this annotation) are removed, so that neither the garbage collector nor a later
//     owner of the same name touches it (a new owner, or the same one declaring the child again, finds
//     an orphan: an *OrphanError, adopted only with WithAdoptOrphans). A kept child carries no controller reference while it is owned either, only the
//     tracking labels: the garbage collector never deletes it, even when the owner is deleted with
//     foreground propagation (which deletes dependents before any finalizer of the owner runs) or its
//     finalizer is removed by hand. Nor is it ever recreated: with WithRecreateOnImmutable, a change to
//     one of its immutable fields stays an *ImmutableFieldError.
//   - "foreground": the child is deleted with foreground propagation: its own dependents (a
//     Deployment's ReplicaSets and their Pods) are gone before it is, so ordered deletion deletes what it
//     depends on only after them. The garbage collector (kube-controller-manager) does this work; a bare
//     API server without it (envtest) never removes such a child.
//   - absent, or "background": the default, background propagation: the child goes at once
//     and the garbage collector removes its dependents afterwards.
//
// Any other value makes Graph.Validate fail.
const DeletionPolicyAnnotation = marks.DeletionPolicy

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
	case marks.PolicyKeep:
		return policyKeep
	case "foreground":
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
