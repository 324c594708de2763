//go:build integration

package controller_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/memcached/controller"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/harness"
	"github.com/convergo-dev/convergo/testing/optest"
)

const timeout = optest.Timeout

// newMemcached creates a Memcached in ns and, at cleanup, deletes it and waits until the operator has
// released it (cleanups run in reverse order, so the operator started before is still running).
func newMemcached(t *testing.T, env *harness.Env, ns, name string, spec v1alpha1.MemcachedSpec) *v1alpha1.Memcached {
	t.Helper()
	return optest.Create(t, env.Client, &v1alpha1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec})
}

// conditionsAre reports whether the conditions hold want ("Status/Reason" or "absent" by type) and
// were all set for the current generation.
var conditionsAre = optest.ConditionsAre[*v1alpha1.Memcached]

var (
	ready       = map[string]string{status.Ready: "True/Reconciled", status.Reconciling: "absent", status.Stalled: "absent"}
	waitingDeps = map[string]string{status.Ready: "False/WaitingForDependencies", status.Reconciling: "True/WaitingForDependencies", status.Stalled: "absent"}
)

// createPods creates pods the way the Deployment's ReplicaSet would, so that status.nodes has
// something to list.
func createPods(t *testing.T, c client.Client, mc *v1alpha1.Memcached, names ...string) {
	t.Helper()
	for _, name := range names {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: mc.Namespace, Name: name, Labels: controller.Labels(mc).All()},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "memcached", Image: mc.Spec.Image}}},
		}
		if err := c.Create(t.Context(), pod); err != nil {
			t.Fatalf("create pod: %v", err)
		}
	}
}

// TestLifecycle follows one Memcached from creation to deletion: children in order, readiness,
// scaling, an image and port change, and ordered teardown.
func TestLifecycle(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	env.StartManager(t, controller.SetupWithManager, shippedCache(), shippedCache())
	mc := newMemcached(t, env, ns, "cache", v1alpha1.MemcachedSpec{Size: 2})
	key := client.ObjectKeyFromObject(mc)

	// The Deployment comes first; the Service waits until the Deployment is available.
	var deploy appsv1.Deployment
	harness.WaitForObject(t, env.Client, key, &deploy, timeout, nil)
	harness.WaitForObject(t, env.Client, key, mc, timeout, conditionsAre(waitingDeps))
	if err := env.Client.Get(t.Context(), key, &corev1.Service{}); !apierrors.IsNotFound(err) {
		t.Fatalf("service exists before the deployment is available (get: %v)", err)
	}
	wantContainer := corev1.Container{
		Name:  "memcached",
		Image: v1alpha1.DefaultImage,
		Args:  []string{"--port=11211", "--memory-limit=64", "--conn-limit=1024"},
		Ports: []corev1.ContainerPort{{Name: "memcached", ContainerPort: 11211, Protocol: corev1.ProtocolTCP}},
	}
	checkDeployment(t, &deploy, 2, wantContainer)
	if !metav1.IsControlledBy(&deploy, mc) {
		t.Errorf("deployment is not controlled by the memcached: %v", deploy.OwnerReferences)
	}

	// Once the pods are available, the Service is created and the Memcached is Ready.
	createPods(t, env.Client, mc, "cache-b", "cache-a")
	optest.MarkDeploymentAvailable(t, env.Client, key)
	var svc corev1.Service
	harness.WaitForObject(t, env.Client, key, &svc, timeout, nil)
	checkService(t, &svc, mc, 11211)
	harness.WaitForObject(t, env.Client, key, mc, timeout, conditionsAre(ready))
	if diff := cmp.Diff(v1alpha1.MemcachedStatus{ReadyReplicas: 2, Nodes: []string{"cache-a", "cache-b"}},
		mc.Status, optest.IgnoreConditions()); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	optest.WaitForEvent(t, env.Client, mc, corev1.EventTypeNormal, "ChildrenApplied")

	// Scale up: the Deployment follows; the Memcached is Reconciling until the new pods are available
	// (the Service, which depends on the Deployment, waits for it).
	optest.Update(t, env.Client, mc, func(m *v1alpha1.Memcached) { m.Spec.Size = 4 })
	harness.WaitForObject(t, env.Client, key, &deploy, timeout, func(d *appsv1.Deployment) bool {
		return ptr.Deref(d.Spec.Replicas, 0) == 4
	})
	harness.WaitForObject(t, env.Client, key, mc, timeout, conditionsAre(waitingDeps))
	optest.MarkDeploymentAvailable(t, env.Client, key)
	harness.WaitForObject(t, env.Client, key, mc, timeout, func(m *v1alpha1.Memcached) bool {
		return conditionsAre(ready)(m) && m.Status.ReadyReplicas == 4
	})

	// A new image and port roll the Deployment and move the Service.
	optest.Update(t, env.Client, mc, func(m *v1alpha1.Memcached) {
		m.Spec.Image = "docker.io/library/memcached:1.6.40-alpine"
		m.Spec.Port = 11311
	})
	wantContainer.Image = "docker.io/library/memcached:1.6.40-alpine"
	wantContainer.Args[0] = "--port=11311"
	wantContainer.Ports[0].ContainerPort = 11311
	harness.WaitForObject(t, env.Client, key, &deploy, timeout, func(d *appsv1.Deployment) bool {
		return d.Spec.Template.Spec.Containers[0].Image == wantContainer.Image
	})
	checkDeployment(t, &deploy, 4, wantContainer)
	optest.MarkDeploymentAvailable(t, env.Client, key)
	harness.WaitForObject(t, env.Client, key, &svc, timeout, func(s *corev1.Service) bool { return s.Spec.Ports[0].Port == 11311 })
	checkService(t, &svc, mc, 11311)
	harness.WaitForObject(t, env.Client, key, mc, timeout, conditionsAre(ready))

	// Deletion: the Service goes first. Another controller's finalizer holds it, and meanwhile the
	// Deployment is untouched and the Memcached says what it waits for.
	const hold = "test.convergo.dev/hold"
	optest.PatchFinalizers(t, env.Client, &svc, []string{hold})
	if err := env.Client.Delete(t.Context(), mc); err != nil {
		t.Fatal(err)
	}
	harness.WaitForObject(t, env.Client, key, &svc, timeout, func(s *corev1.Service) bool { return s.DeletionTimestamp != nil })
	harness.WaitForObject(t, env.Client, key, mc, timeout, func(m *v1alpha1.Memcached) bool {
		return optest.Condition(m, status.Reconciling) == "True/Deleting"
	})
	optest.RequireNotDeleting(t, env.Client, key, &deploy)
	optest.PatchFinalizers(t, env.Client, &svc, nil)
	harness.WaitForDeletion(t, env.Client, &svc, timeout)
	harness.WaitForDeletion(t, env.Client, &deploy, timeout)
	harness.WaitForDeletion(t, env.Client, mc, timeout)
}

// TestZeroRequestsOnceConverged reconciles a converged Memcached again, for several reasons, and checks
// that the operator sends no request at all, neither a write nor a read, until the reconcile that read
// the change has finished.
func TestZeroRequestsOnceConverged(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	op := optest.StartOperator(t, env, controller.SetupWithManager, shippedCache())
	mc := newMemcached(t, env, ns, "cache", v1alpha1.MemcachedSpec{
		Size: 3, MaxUnavailable: ptr.To[int32](1),
		Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("96Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		},
	})
	key := client.ObjectKeyFromObject(mc)
	harness.WaitForObject(t, env.Client, key, &appsv1.Deployment{}, timeout, nil)
	optest.MarkDeploymentAvailable(t, env.Client, key)
	harness.WaitForObject(t, env.Client, key, &corev1.Service{}, timeout, nil)
	harness.WaitForObject(t, env.Client, key, mc, timeout, conditionsAre(ready))
	t.Logf("requests to converge:\n%s", op.Requests.Snapshot().InNamespace(ns))

	op.ExpectNoRequests(t, key, map[string]optest.Trigger{
		"annotation on the memcached": func(t testing.TB) client.Object {
			return optest.MergePatch(t, env.Client, mc, `{"metadata":{"annotations":{"example.com/note":"hello"}}}`)
		},
		"label added to the deployment by someone else": func(t testing.TB) client.Object {
			return optest.MergePatch(t, env.Client, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"}}, `{"metadata":{"labels":{"example.com/team":"cache"}}}`)
		},
		// A status change that leaves the Deployment's readiness as it was wakes no reconcile at all
		// (reconcile.WithEveryChildChange); a label someone adds next wakes one, which reads both.
		"deployment status changed by the deployment controller": func(t testing.TB) client.Object {
			optest.MarkDeploymentProgressing(t, env.Client, key)
			return optest.MergePatch(t, env.Client, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"}}, `{"metadata":{"labels":{"example.com/seen":"progressing"}}}`)
		},
	})
}

// TestInvalidSpecStallsUntilFixed creates a Memcached the schema accepts but that cannot run (a memory
// limit below the cache size): it is Stalled with the reason and a Warning event, and recovers when the
// spec is fixed.
func TestInvalidSpecStallsUntilFixed(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	env.StartManager(t, controller.SetupWithManager, shippedCache(), shippedCache())
	mc := newMemcached(t, env, ns, "cache", v1alpha1.MemcachedSpec{
		Size: 1, CacheSizeMB: 256,
		Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
	})
	key := client.ObjectKeyFromObject(mc)
	harness.WaitForObject(t, env.Client, key, mc, timeout, conditionsAre(map[string]string{
		status.Stalled: "True/InvalidSpec", status.Ready: "False/InvalidSpec", status.Reconciling: "absent",
	}))
	want := "spec.resources.limits.memory (128Mi) is smaller than spec.cacheSizeMB (256Mi): memcached would be killed when the cache fills"
	if got := meta.FindStatusCondition(mc.GetConditions(), status.Stalled).Message; got != want {
		t.Errorf("Stalled message:\n got: %s\nwant: %s", got, want)
	}
	event := optest.WaitForEvent(t, env.Client, mc, corev1.EventTypeWarning, "InvalidSpec")
	if event.Note != want {
		t.Errorf("event note:\n got: %s\nwant: %s", event.Note, want)
	}
	if err := env.Client.Get(t.Context(), key, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("a deployment exists for an invalid spec (get: %v)", err)
	}

	optest.Update(t, env.Client, mc, func(m *v1alpha1.Memcached) {
		m.Spec.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("320Mi")
	})
	harness.WaitForObject(t, env.Client, key, &appsv1.Deployment{}, timeout, nil)
	optest.MarkDeploymentAvailable(t, env.Client, key)
	harness.WaitForObject(t, env.Client, key, mc, timeout, conditionsAre(ready))
}

// TestGeneratedRoleIsEnough runs the operator as a ServiceAccount bound to nothing but the generated
// config/rbac/role.yaml, through a whole lifecycle: a missing permission fails it.
func TestGeneratedRoleIsEnough(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	cfg := optest.ServiceAccountConfig(t, env.Config, env.Client, ns, "../config/rbac/role.yaml")
	env.StartManager(t, controller.SetupWithManager, shippedCache(), harness.WithManagerConfig(cfg))
	mc := newMemcached(t, env, ns, "cache", v1alpha1.MemcachedSpec{Size: 1})
	key := client.ObjectKeyFromObject(mc)
	harness.WaitForObject(t, env.Client, key, &appsv1.Deployment{}, timeout, nil)
	createPods(t, env.Client, mc, "cache-0")
	optest.MarkDeploymentAvailable(t, env.Client, key)
	harness.WaitForObject(t, env.Client, key, mc, timeout, func(m *v1alpha1.Memcached) bool {
		return conditionsAre(ready)(m) && slices.Equal(m.Status.Nodes, []string{"cache-0"})
	})
	event := optest.WaitForEvent(t, env.Client, mc, corev1.EventTypeNormal, "ChildrenApplied")
	if event.ReportingController != controller.Name {
		t.Errorf("event reported by %q, want %q", event.ReportingController, controller.Name)
	}
	if err := env.Client.Delete(t.Context(), mc); err != nil {
		t.Fatal(err)
	}
	harness.WaitForDeletion(t, env.Client, mc, timeout)
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
		if err := env.Client.Get(t.Context(), key, obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T still exists after the memcached was deleted (get: %v)", obj, err)
		}
	}
}

func checkDeployment(t *testing.T, d *appsv1.Deployment, replicas int32, want corev1.Container) {
	t.Helper()
	if got := ptr.Deref(d.Spec.Replicas, -1); got != replicas {
		t.Errorf("deployment replicas = %d, want %d", got, replicas)
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("deployment has %d containers, want 1", len(pod.Containers))
	}
	got := pod.Containers[0]
	port := want.Ports[0].ContainerPort
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}}}
	for name, p := range map[string]*corev1.Probe{"liveness": got.LivenessProbe, "readiness": got.ReadinessProbe} {
		if p == nil || p.TCPSocket == nil || p.TCPSocket.Port != probe.TCPSocket.Port {
			t.Errorf("%s probe %+v, want a TCP probe on port %d", name, p, port)
		}
	}
	if diff := cmp.Diff(want, corev1.Container{Name: got.Name, Image: got.Image, Args: got.Args, Ports: got.Ports}); diff != "" {
		t.Errorf("container (-want +got):\n%s", diff)
	}
	sc := got.SecurityContext
	if pod.SecurityContext == nil || !ptr.Deref(pod.SecurityContext.RunAsNonRoot, false) || ptr.Deref(pod.SecurityContext.RunAsUser, 0) != 11211 ||
		sc == nil || ptr.Deref(sc.AllowPrivilegeEscalation, true) || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) {
		t.Errorf("pod is not locked down: pod %+v, container %+v", pod.SecurityContext, sc)
	}
}

func checkService(t *testing.T, svc *corev1.Service, mc *v1alpha1.Memcached, port int32) {
	t.Helper()
	want := []corev1.ServicePort{{Name: "memcached", Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromString("memcached")}}
	if diff := cmp.Diff(want, svc.Spec.Ports); diff != "" {
		t.Errorf("service ports (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(controller.Labels(mc).Selector(), svc.Spec.Selector); diff != "" {
		t.Errorf("service selector (-want +got):\n%s", diff)
	}
}

// shippedCache gives the test's manager the cache options the operator's main uses
// (controller.CacheOptions), so that the tests check the operator as it is shipped.
func shippedCache() harness.ManagerOption {
	return harness.WithManagerOptions(func(o *manager.Options) { controller.CacheOptions(&o.Cache) })
}
