package bench

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/ownership"
)

// foreignPerCR is how many objects that are not the implementation's the memory measurement creates per
// CR: ConfigMaps of the size of a Welcome's page, and a few Deployments and Services.
const foreignPerCR = 10

// foreignLabels mark the objects foreign creates. The cluster copies them onto what it makes for those
// objects: the EndpointSlices and Endpoints of the foreign Services.
var foreignLabels = map[string]string{foreignLabel: "true"}

// foreignLabel is the key of foreignLabels.
const foreignLabel = "bench.convergo.dev/foreign"

// foreignPodLabel is the key of the foreign Deployments' selector, which their ReplicaSets carry.
const foreignPodLabel = "foreign"

// foreign creates foreignPerCR * N ConfigMaps, Deployments and Services in the namespace with another
// field manager (children of no Welcome), waits until the manager's informers have delivered them, and
// returns the growth of the live heap since heapAfter per object. A marker ConfigMap created last
// carries Convergo's tracking label, so that every implementation's cache shows it, filtered or not:
// once it is there, the watch has delivered everything created before it. The objects are deleted
// before it returns; foreignGone waits until the cluster is done with them.
func (r *run) foreign(ctx context.Context, heapAfter runtime.MemStats) (float64, int, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.phaseTimeout)
	defer cancel()
	c := r.env.Client
	count := foreignPerCR * r.cfg.n
	defer func() {
		for _, obj := range []client.Object{&corev1.ConfigMap{}, &appsv1.Deployment{}, &corev1.Service{}} {
			_ = c.DeleteAllOf(context.Background(), obj, client.InNamespace(r.ns), client.MatchingLabels(foreignLabels))
		}
	}()
	page := strings.Repeat("x", 2000)
	for i := range count {
		name := fmt.Sprintf("foreign-%d", i)
		meta := metav1.ObjectMeta{Name: name, Namespace: r.ns, Labels: foreignLabels}
		var obj client.Object
		switch i % 10 {
		case 0:
			d := &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](0),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{foreignPodLabel: name}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{foreignPodLabel: name}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/foreign:1"}}},
				},
			}}
			obj = d
		case 1:
			obj = &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone,
				Selector: map[string]string{foreignPodLabel: name}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
		default:
			obj = &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"page.html": page}}
		}
		if err := c.Create(ctx, obj, client.FieldOwner("someone-else")); err != nil {
			return 0, 0, fmt.Errorf("create %s: %w", name, err)
		}
	}
	marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "foreign-marker", Namespace: r.ns,
		Labels: map[string]string{foreignLabel: "true", ownership.OwnerUIDLabel: "none"}}}
	if err := c.Create(ctx, marker, client.FieldOwner("someone-else")); err != nil {
		return 0, 0, fmt.Errorf("create marker: %w", err)
	}
	reader := r.mgr.client
	if err := poll(ctx, func() (bool, error) {
		err := reader.Get(ctx, client.ObjectKeyFromObject(marker), &corev1.ConfigMap{})
		return err == nil, client.IgnoreNotFound(err)
	}); err != nil {
		return 0, 0, fmt.Errorf("wait for the marker in the manager's cache: %w", err)
	}
	r.counter.Reset()
	grown := heap()
	return float64(int64(grown.HeapAlloc)-int64(heapAfter.HeapAlloc)) / float64(count), count, nil
}

// Control-plane quiet after the foreign objects' deletion: each of serverComponents uses at most
// quietCPU of a core over a quietWindow, looked for during at most quietWait.
const (
	quietCPU    = 0.1
	quietWindow = time.Second
	quietWait   = time.Minute
)

// foreignGone waits until the objects foreign made and deleted are gone with what the cluster made for
// them (the foreign Deployments' ReplicaSets, the foreign Services' EndpointSlices and Endpoints), then
// until the control plane is quiet again, so that the next phase (restart) is measured on a cluster
// that does nothing else. At N=1000 the garbage collector's part of that is 2,000 deletions, paced by
// kube-controller-manager's client: without this wait the restart ran beside it. A control plane that
// stays busy for quietWait is logged, not an error.
func (r *run) foreignGone(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.phaseTimeout)
	defer cancel()
	start := time.Now()
	c := r.env.Client
	labelled := client.MatchingLabels(foreignLabels)
	if err := waitEmpty(ctx, c, []client.ObjectList{&corev1.ConfigMapList{}, &appsv1.DeploymentList{},
		&corev1.ServiceList{}, &discoveryv1.EndpointSliceList{}, &corev1.EndpointsList{}},
		client.InNamespace(r.ns), labelled); err != nil {
		return fmt.Errorf("foreign objects: %w", err)
	}
	if err := waitEmpty(ctx, c, []client.ObjectList{&appsv1.ReplicaSetList{}},
		client.InNamespace(r.ns), client.HasLabels{foreignPodLabel}); err != nil {
		return fmt.Errorf("foreign objects: %w", err)
	}
	gone := time.Since(start)
	quiet, err := r.quietControlPlane(ctx)
	if err != nil {
		return err
	}
	r.log.Info("foreign objects gone", "after", gone.Round(time.Millisecond),
		"controlPlaneQuietAfter", time.Since(start).Round(time.Millisecond), "quiet", quiet)
	return nil
}

// quietControlPlane waits until, over one quietWindow, no component of serverComponents used more than
// quietCPU of a core, and reports whether that happened within quietWait. Without process access to
// the cluster it reports true at once.
func (r *run) quietControlPlane(ctx context.Context) (bool, error) {
	if r.env.Cluster() == nil {
		return true, nil
	}
	read := func() map[string]time.Duration {
		out := r.serverCPU()
		delete(out, processComponent) // the driver and the stopped manager's informers, not the cluster
		delete(out, machineComponent) // the cluster and the driver together
		return out
	}
	deadline := time.Now().Add(quietWait)
	for time.Now().Before(deadline) {
		before := read()
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(quietWindow):
		}
		if busiest(cpuSince(before, read()), quietWindow) <= quietCPU {
			return true, nil
		}
	}
	return false, nil
}

// busiest returns the largest share of a core any component of used (CPU seconds) took over window.
func busiest(used map[string]float64, window time.Duration) float64 {
	var most float64
	for _, sec := range used {
		most = max(most, sec/window.Seconds())
	}
	return most
}
