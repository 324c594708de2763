// Package status keeps the conditions of a custom resource honest and writes status with as few and as
// safe requests as possible.
//
// Conditions follow kstatus: Ready summarizes the object; Reconciling and Stalled are abnormal-true
// conditions, present only while true, never both true, never true while Ready is True. Every condition
// set through this package carries the object's generation as observedGeneration (and so does a
// top-level status.observedGeneration where the type has one), and lastTransitionTime changes only when
// a condition's status changes. Existing conditions keep their order; new ones are appended.
//
// The Patcher compares the status before and after a reconcile and sends nothing when it is unchanged.
// Otherwise it sends a merge patch of the status subresource holding only the difference, guarded by the
// resourceVersion; on a conflict it re-reads, re-applies only its own changes and retries, so conditions
// other writers own are never dropped.
//
// Usage:
//
//	before := obj.DeepCopy()
//	if ready {
//		status.MarkReady(obj, "Succeeded", "all replicas are available")
//	} else {
//		status.MarkReconciling(obj, "Progressing", "waiting for replicas")
//	}
//	status.Set(obj, metav1.Condition{Type: "ConfigSynced", Status: metav1.ConditionTrue, Reason: "Synced", Message: fmt.Sprintf("config %s applied", cfgName)})
//	wrote, err := status.NewPatcher(c).Patch(ctx, obj, before)
//
// Objects qualify by implementing Object (GetConditions/SetConditions on their status conditions).
//
// Time: lastTransitionTime is taken from the wall clock, truncated to whole seconds (the precision the
// API stores). Set uses the condition's own LastTransitionTime instead when the caller provides one; that
// is the way to inject a time. (The clock itself is an unexported package variable that only this
// package's own tests replace.)
//
// Reading conditions needs nothing of this package: apimachinery's meta.FindStatusCondition and
// meta.IsStatusConditionTrue read obj.GetConditions(); IsReady adds the generation check kstatus
// needs.
package status
