package bench

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/internal/wait"
	"github.com/convergo-dev/convergo/testing/harness"
)

// warmUp readies the fresh cluster for fair measurements. The garbage collector learns about new
// kinds (the Welcome CRD) only when it next syncs with discovery, every 30 seconds; until then it
// cannot tell whether a child's owner is gone, which would slow down the first delete phase of an
// implementation that relies on it. warmUp therefore creates a Welcome (with no operator running)
// owning a ConfigMap and a one-pod Deployment by hand, waits for the Deployment to become available
// (exercising the deployment controller, scheduler and kwok once), deletes the Welcome and waits until
// the garbage collector has removed both children.
func warmUp(ctx context.Context, env *harness.Env, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := env.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench-warmup"}}
	if err := c.Create(ctx, ns); err != nil {
		return fmt.Errorf("warm up: create namespace: %w", err)
	}
	owner := &v1alpha1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Name: "warmup", Namespace: ns.Name},
		Spec:       v1alpha1.WelcomeSpec{Name: "Warm-up"},
	}
	if err := c.Create(ctx, owner); err != nil {
		return fmt.Errorf("warm up: create welcome: %w", err)
	}
	labels := map[string]string{"app.kubernetes.io/name": "warmup"}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "warmup", Namespace: ns.Name}}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "warmup", Namespace: ns.Name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: v1alpha1.DefaultImage}}},
			},
		},
	}
	for _, child := range []client.Object{cm, dep} {
		if err := controllerutil.SetControllerReference(owner, child, env.Scheme); err != nil {
			return fmt.Errorf("warm up: %w", err)
		}
		if err := c.Create(ctx, child); err != nil {
			return fmt.Errorf("warm up: create %T: %w", child, err)
		}
	}
	if err := poll(ctx, func() (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
			return false, err
		}
		return dep.Status.AvailableReplicas == 1, nil
	}); err != nil {
		return fmt.Errorf("warm up: wait for the deployment to be available: %w", err)
	}
	if err := c.Delete(ctx, owner); err != nil {
		return fmt.Errorf("warm up: delete welcome: %w", err)
	}
	for _, child := range []client.Object{cm, dep} {
		if err := poll(ctx, func() (bool, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(child), child)
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		}); err != nil {
			return fmt.Errorf("warm up: wait for the garbage collector to delete %T: %w", child, err)
		}
	}
	if err := c.Delete(ctx, ns); err != nil {
		return fmt.Errorf("warm up: delete namespace: %w", err)
	}
	return nil
}

// poll calls check every pollInterval until it reports done, fails, or ctx ends.
func poll(ctx context.Context, check func() (bool, error)) error {
	for {
		done, err := check()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if err := wait.Sleep(ctx, pollInterval); err != nil {
			return err
		}
	}
}
