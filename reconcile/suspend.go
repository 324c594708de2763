package reconcile

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/convergo-dev/convergo/status"
)

// SuspendAnnotation suspends the reconciliation of one object when set to "true" on it (kubectl
// annotate welcome alice convergo.dev/suspend=true); removing it, or any other value, resumes. An
// operator whose API has a field for it (Flux's spec.suspend) reports it with Hooks.Suspended instead.
//
// While suspended, the object's children are left exactly as they are: nothing is applied, pruned or
// reverted, and no request is sent but the one status write that says so, without an event. The status
// reads right in kstatus-based tools (kubectl wait, Flux and Argo CD health checks):
//
//   - ConditionSuspended=True says why nothing happens and how to resume;
//   - Ready keeps its verdict when it was True: the children that made the object ready are still
//     there, so kstatus reads it Current and waits on it end; otherwise Ready=False with reason
//     Suspended, which kstatus reads InProgress (nothing will make it ready until it resumes);
//   - Reconciling and Stalled are removed, so kstatus never reads a suspended object as Failed;
//   - status.observedGeneration (and the conditions') stays at the generation the suspension was
//     first seen at: a spec changed while suspended reads InProgress in kstatus until it is applied
//     after the resume, while an unchanged suspended object stays Current.
//
// Resuming removes ConditionSuspended and converges at once. Deleting a suspended object is not
// suspended: its children are deleted in order and the finalizer removed, since a deletion that waited
// for a resume would hold the object, and a finalizer dropped without it would orphan its children.
const SuspendAnnotation = "convergo.dev/suspend"

// ConditionSuspended is the condition type that is True while the object is suspended; it is also the
// reason of that condition and of Ready=False for a suspended object that was not ready.
const ConditionSuspended = "Suspended"

// resultSuspended counts the reconciles of suspended objects.
const resultSuspended = "suspended"

// suspended reports whether obj's reconciliation is suspended.
func (r *Reconciler[T]) suspended(obj T) bool {
	if obj.GetAnnotations()[SuspendAnnotation] == "true" {
		return true
	}
	return r.suspendedFn != nil && r.suspendedFn(obj)
}

// suspend records in obj's status that it is suspended and touches nothing else.
func (r *Reconciler[T]) suspend(ctx context.Context, log logr.Logger, obj T) (ctrl.Result, error) {
	r.result(ctx, resultSuspended)
	before, err := snapshot(obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	how := fmt.Sprintf("remove the annotation %s to resume", SuspendAnnotation)
	if obj.GetAnnotations()[SuspendAnnotation] != "true" {
		how = "resume it in its spec"
	}
	msg := "reconciliation is suspended: the children are left as they are; " + how
	// The generation that suspended the object is observed (suspending is what it asks for); one
	// changed while suspended is not applied, so the conditions keep the generation the suspension
	// was first seen at, and kstatus reads the object InProgress until the resume applies it.
	gen := obj.GetGeneration()
	if c := meta.FindStatusCondition(obj.GetConditions(), ConditionSuspended); c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration < gen {
		obj.SetGeneration(c.ObservedGeneration)
	}
	changed := status.Set(obj, metav1.Condition{Type: ConditionSuspended, Status: metav1.ConditionTrue, Reason: ConditionSuspended, Message: msg})
	if !meta.IsStatusConditionTrue(obj.GetConditions(), status.Ready) {
		changed = status.Set(obj, metav1.Condition{Type: status.Ready, Status: metav1.ConditionFalse, Reason: ConditionSuspended, Message: msg}) || changed
	}
	changed = status.Remove(obj, status.Reconciling) || changed
	changed = status.Remove(obj, status.Stalled) || changed
	obj.SetGeneration(gen) // the status patch sends only the status
	if !changed {
		return ctrl.Result{}, nil
	}
	wrote, err := r.patchStatus(ctx, obj, before)
	if wrote {
		log.Info("suspended: children left as they are")
	}
	return ctrl.Result{}, err
}
