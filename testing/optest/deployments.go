package optest

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MarkDeploymentAvailable writes the status the Deployment controller and kubelets would report once
// every replica of the current template is available, and returns the Deployment as the API server
// answered. A bare API server (testing/harness's plain mode) runs neither, so an operator that waits
// for its Deployment to be available needs this in its tests.
func MarkDeploymentAvailable(t testing.TB, c client.Client, key client.ObjectKey) *appsv1.Deployment {
	t.Helper()
	return updateDeploymentStatus(t, c, key, "available", func(d *appsv1.Deployment) {
		n := ptr.Deref(d.Spec.Replicas, 1)
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation,
			Replicas:           n,
			UpdatedReplicas:    n,
			ReadyReplicas:      n,
			AvailableReplicas:  n,
			Conditions: []appsv1.DeploymentCondition{{
				Type:               appsv1.DeploymentAvailable,
				Status:             corev1.ConditionTrue,
				Reason:             "MinimumReplicasAvailable",
				Message:            "Deployment has minimum availability.",
				LastUpdateTime:     metav1.Now(),
				LastTransitionTime: metav1.Now(),
			}},
		}
	})
}

// MarkDeploymentProgressing adds the condition the Deployment controller reports once a rollout is
// complete (Progressing=True, reason NewReplicaSetAvailable), a status change that is no news to an
// operator (a Convergo Reconciler whose ReadyWhen judges the Deployment is not even woken by it), and
// returns the Deployment as the API server answered.
func MarkDeploymentProgressing(t testing.TB, c client.Client, key client.ObjectKey) *appsv1.Deployment {
	t.Helper()
	return updateDeploymentStatus(t, c, key, "progressing", func(d *appsv1.Deployment) {
		d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{
			Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
			LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		})
	})
}

// updateDeploymentStatus applies change to the Deployment named key and writes its status, again from a
// fresh read on conflicts, and returns what the API server answered; state says what the change marks
// it, for the failure message.
func updateDeploymentStatus(t testing.TB, c client.Client, key client.ObjectKey, state string, change func(*appsv1.Deployment)) *appsv1.Deployment {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	var d appsv1.Deployment
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d = appsv1.Deployment{}
		if err := c.Get(ctx, key, &d); err != nil {
			return err
		}
		change(&d)
		return c.Status().Update(ctx, &d)
	})
	if err != nil {
		t.Fatalf("mark deployment %s %s: %v", key, state, err)
	}
	return &d
}
