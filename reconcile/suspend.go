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

// suspendAnnotation suspends one object when set to "true" (see the package documentation,
// "Suspension").
const suspendAnnotation = "convergo.dev/suspend"

// conditionSuspended is the condition type that is True while the object is suspended; it is also the
// reason of that condition and of Ready=False for a suspended object that was not ready.
const conditionSuspended = "Suspended"

// resultSuspended counts the reconciles of suspended objects.
const resultSuspended = "suspended"

// suspended reports whether obj's reconciliation is suspended.
func (r *Reconciler[T]) suspended(obj T) bool {
	if obj.GetAnnotations()[suspendAnnotation] == "true" {
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
	how := fmt.Sprintf("remove the annotation %s to resume", suspendAnnotation)
	if obj.GetAnnotations()[suspendAnnotation] != "true" {
		how = "resume it in its spec"
	}
	msg := "reconciliation is suspended: the children are left as they are; " + how
	// The generation that suspended the object is observed (suspending is what it asks for); one
	// changed while suspended is not applied, so the conditions keep the generation the suspension
	// was first seen at, and kstatus reads the object InProgress until the resume applies it.
	gen := obj.GetGeneration()
	if c := meta.FindStatusCondition(obj.GetConditions(), conditionSuspended); c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration < gen {
		obj.SetGeneration(c.ObservedGeneration)
	}
	changed := status.Set(obj, metav1.Condition{Type: conditionSuspended, Status: metav1.ConditionTrue, Reason: conditionSuspended, Message: msg})
	if !meta.IsStatusConditionTrue(obj.GetConditions(), status.Ready) {
		changed = status.Set(obj, metav1.Condition{Type: status.Ready, Status: metav1.ConditionFalse, Reason: conditionSuspended, Message: msg}) || changed
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
