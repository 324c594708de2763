package reconcile

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/convergo-dev/convergo/status"
)

// SuspendAnnotation suspends the reconciliation of one object when set to "true" on it (kubectl
// annotate welcome alice convergo.dev/suspend=true); removing it, or any other value, resumes. An
// operator whose API has a field for it (Flux's spec.suspend) reports it with Hooks.Suspended instead.
//
// While suspended, the object's children are left exactly as they are: nothing is applied, pruned or
// reverted, and no request is sent but the status write that says so (Ready=False with reason
// Suspended, Reconciling and Stalled removed, so kstatus-based tools show the object settled and its
// Ready condition says why it is not ready). Resuming converges at once. Deleting a suspended object
// is not suspended: its children are deleted in order and the finalizer removed, since a deletion
// that waited for a resume would hold the object, and a finalizer dropped without it would orphan its
// children.
const SuspendAnnotation = "convergo.dev/suspend"

// ReasonSuspended: Ready=False while the object is suspended (SuspendAnnotation, Hooks.Suspended).
const ReasonSuspended = "Suspended"

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
	r.metrics.result(resultSuspended)
	before, err := snapshot(obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	how := fmt.Sprintf("remove the annotation %s to resume", SuspendAnnotation)
	if obj.GetAnnotations()[SuspendAnnotation] != "true" {
		how = "resume it in its spec"
	}
	changed := status.Set(obj, metav1.Condition{Type: status.Ready, Status: metav1.ConditionFalse, Reason: ReasonSuspended,
		Message: "reconciliation is suspended: the children are left as they are; " + how})
	changed = status.Remove(obj, status.Reconciling) || changed
	changed = status.Remove(obj, status.Stalled) || changed
	if !changed {
		return ctrl.Result{}, nil
	}
	wrote, err := r.patchStatus(ctx, obj, before)
	if err != nil {
		return ctrl.Result{}, err
	}
	if wrote {
		log.Info("suspended: children left as they are")
		r.normal(obj, nil, ReasonSuspended, "Reconcile", "reconciliation suspended; "+how)
	}
	return ctrl.Result{}, nil
}
