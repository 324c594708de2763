package bench

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/testing/harness"
)

// maxWarmUpBatch bounds the Welcomes warmUp creates.
const maxWarmUpBatch = 100

// warmUp readies the fresh cluster for fair measurements, with no operator running, so that neither
// implementation pays for a cold cluster. The garbage collector learns about new kinds (the Welcome
// CRD) only when it next syncs with discovery, every 30 seconds; until then it cannot tell whether a
// child's owner is gone, which would slow down the first delete phase of an implementation that
// relies on it. And the first burst of Deployments and pods is slower than the next ones (caches and
// heaps of the control plane grow). warmUp therefore rolls out batch Deployments by hand (at most
// maxWarmUpBatch; see byHand) in the namespace bench-warmup.
func warmUp(ctx context.Context, env *harness.Env, batch int, timeout time.Duration, rollout bool) (ByHand, error) {
	res, err := byHand(ctx, env, "bench-warmup", min(max(batch, 1), maxWarmUpBatch), timeout, rollout, 0)
	if err != nil {
		return res, fmt.Errorf("warm up: %w", err)
	}
	return res, nil
}

// byHand creates, in the new namespace ns, batch Welcomes each owning a ConfigMap and a one-pod
// Deployment made by the driver (16 at a time, as the driver's phases create), with no operator
// running; waits until every Deployment is available (the deployment controller, scheduler and kwok at
// work); deletes the Welcomes and waits until the garbage collector has removed every child, ReplicaSet
// and Pod, and until its namespace is gone, so that none of its work is left for the measurements. Without
// rollout (a cluster whose deployment controller is off, see WithoutRollout) it does not wait for the
// Deployments.
//
// With rollout and scaleTo above 0, once all are available it sets every Deployment's replicas to
// scaleTo (16 patches at a time) and waits until each has that many available.
//
// It returns how many Deployments it made, how long after their creation began they were all
// available (0 without rollout), and how long after the first patch they were all scaled: what the
// cluster takes to roll out that many Deployments created at once, and to scale them, with no operator
// in between; and the CPU each component of the cluster and the machine spent meanwhile, read at
// those two moments (no Service, and work the cluster does after them left out, so the figures are
// at most what the cluster's own part costs).
func byHand(ctx context.Context, env *harness.Env, namespace string, batch int, timeout time.Duration, rollout bool, scaleTo int32) (ByHand, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := env.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := c.Create(ctx, ns); err != nil {
		return ByHand{}, fmt.Errorf("create namespace: %w", err)
	}
	res := ByHand{Deployments: batch}
	labels := map[string]string{"app.kubernetes.io/name": "warmup"}
	names := make([]string, batch)
	for i := range names {
		names[i] = fmt.Sprintf("by-hand-%04d", i)
	}
	cpuBefore, start := serverCPU(env), time.Now()
	// As many concurrent creates as the driver's phases make.
	if err := forEachName(ctx, DefaultWorkers, names, func(name string) error {
		return warmUpObjects(ctx, env, ns.Name, name, labels)
	}); err != nil {
		return res, err
	}
	if rollout {
		if err := waitAvailable(ctx, c, ns.Name, batch, 1); err != nil {
			return res, err
		}
		res.AvailableSeconds = time.Since(start).Seconds()
		res.AvailableCPU = cpuSince(cpuBefore, serverCPU(env))
	}
	if rollout && scaleTo > 0 {
		cpuBefore := serverCPU(env)
		scaled, err := scale(ctx, c, ns.Name, names, scaleTo)
		if err != nil {
			return res, err
		}
		res.ScaledSeconds = scaled
		res.ScaledCPU = cpuSince(cpuBefore, serverCPU(env))
	}
	for _, name := range names {
		if err := c.Delete(ctx, &v1alpha1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name}}); err != nil {
			return res, fmt.Errorf("delete welcome %s: %w", name, err)
		}
	}
	lists := []client.ObjectList{&corev1.ConfigMapList{}, &appsv1.DeploymentList{}, &appsv1.ReplicaSetList{}, &corev1.PodList{}}
	if err := waitEmpty(ctx, c, lists, client.InNamespace(ns.Name), client.MatchingLabels(labels)); err != nil {
		return res, err
	}
	if err := c.Delete(ctx, ns); err != nil {
		return res, fmt.Errorf("delete namespace: %w", err)
	}
	if err := poll(ctx, func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(ns), ns)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}); err != nil {
		return res, fmt.Errorf("wait for namespace %s to be gone: %w", ns.Name, err)
	}
	return res, nil
}

// scale sets the replicas of the Deployments names in ns to replicas and returns how long after the
// first patch each had that many available.
func scale(ctx context.Context, c client.Client, ns string, names []string, replicas int32) (float64, error) {
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	start := time.Now()
	if err := forEachName(ctx, DefaultWorkers, names, func(name string) error {
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		if err := c.Patch(ctx, dep, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return fmt.Errorf("scale deployment %s: %w", name, err)
		}
		return nil
	}); err != nil {
		return 0, err
	}
	if err := waitAvailable(ctx, c, ns, len(names), replicas); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}

// waitAvailable waits until n Deployments in ns have replicas available for their generation.
func waitAvailable(ctx context.Context, c client.Client, ns string, n int, replicas int32) error {
	if err := poll(ctx, func() (bool, error) {
		var list appsv1.DeploymentList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		available := 0
		for _, d := range list.Items {
			if d.Status.AvailableReplicas == replicas && d.Status.ObservedGeneration == d.Generation {
				available++
			}
		}
		return available == n, nil
	}); err != nil {
		return fmt.Errorf("wait for the deployments to have %d available: %w", replicas, err)
	}
	return nil
}

// warmUpObjects creates a Welcome and, owned by it, a ConfigMap and a one-pod Deployment.
func warmUpObjects(ctx context.Context, env *harness.Env, ns, name string, labels map[string]string) error {
	c := env.Client
	owner := &v1alpha1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1alpha1.WelcomeSpec{Name: "Warm-up"},
	}
	if err := c.Create(ctx, owner); err != nil {
		return fmt.Errorf("create welcome %s: %w", name, err)
	}
	podLabels := map[string]string{"app.kubernetes.io/name": "warmup", "app.kubernetes.io/instance": name}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: v1alpha1.DefaultImage}}},
			},
		},
	}
	for _, child := range []client.Object{cm, dep} {
		if err := controllerutil.SetControllerReference(owner, child, env.Scheme); err != nil {
			return err
		}
		if err := c.Create(ctx, child); err != nil {
			return fmt.Errorf("create %T %s: %w", child, name, err)
		}
	}
	return nil
}

// waitEmpty waits until each of lists, listed with opts, is empty: the garbage collector has deleted
// what it held.
func waitEmpty(ctx context.Context, c client.Client, lists []client.ObjectList, opts ...client.ListOption) error {
	for _, list := range lists {
		if err := poll(ctx, func() (bool, error) {
			if err := c.List(ctx, list, opts...); err != nil {
				return false, err
			}
			return meta.LenList(list) == 0, nil
		}); err != nil {
			return fmt.Errorf("wait for the garbage collector to delete %T: %w", list, err)
		}
	}
	return nil
}

// poll calls check at once and then every pollInterval until it reports done, fails, or ctx ends.
func poll(ctx context.Context, check func() (bool, error)) error {
	return pollEvery(ctx, pollInterval, check)
}

// pollEvery is poll with checks every interval.
func pollEvery(ctx context.Context, every time.Duration, check func() (bool, error)) error {
	return wait.PollUntilContextCancel(ctx, every, true, func(context.Context) (bool, error) { return check() })
}
