//go:build integration

package livetest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/convergo-dev/convergo/builders"
	"github.com/convergo-dev/convergo/testing/harness"
)

// Generous: the machine running the tests is often loaded.
const timeout = 3 * time.Minute

func TestMain(m *testing.M) {
	harness.Main(m, harness.WithFullCluster())
}

// warnings collects the API server's warning headers (PodSecurity "would violate" warnings among them).
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

// warningClient returns a client whose warnings land in the returned collector.
func warningClient(t *testing.T, env *harness.Env) (client.Client, *warnings) {
	t.Helper()
	w := &warnings{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = nil
	cfg.WarningHandlerWithContext = w
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return c, w
}

// restrictedNamespace returns a fresh namespace that enforces, and warns about, the "restricted"
// Pod Security Standard.
func restrictedNamespace(t *testing.T, env *harness.Env) string {
	t.Helper()
	name := env.Namespace(t)
	ns := &corev1.Namespace{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, ns); err != nil {
		t.Fatalf("get namespace: %v", err)
	}
	before := ns.DeepCopy()
	ns.Labels = map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
		"pod-security.kubernetes.io/warn":    "restricted",
	}
	if err := env.Client.Patch(t.Context(), ns, client.MergeFrom(before)); err != nil {
		t.Fatalf("label namespace: %v", err)
	}
	return name
}

func labelsFor(instance string) builders.Labels {
	return builders.Labels{Name: "web", Instance: instance, Component: "frontend", PartOf: "store", ManagedBy: "livetest", Version: "1.0.0"}
}

func webPod(labels builders.Labels, opts ...builders.PodOption) corev1.PodTemplateSpec {
	c := builders.Container("web", "registry.example.com/web:1.0.0",
		builders.WithPort("http", 8080),
		builders.WithReadinessProbe(builders.HTTPProbe("/readyz", 8080)),
		builders.WithLivenessProbe(builders.TCPProbe(8080)),
		builders.WithRequests("10m", "16Mi"),
		builders.WithVolumeMount("tmp", "/tmp"),
	)
	return builders.PodTemplate(labels, []corev1.Container{c},
		append([]builders.PodOption{builders.WithVolumes(builders.EmptyDirVolume("tmp"))}, opts...)...)
}

// TestAcceptedAndAdmittedUnderRestricted creates every builder's output, with most options, in a
// namespace that enforces the restricted standard, and expects no error and no warning at all.
func TestAcceptedAndAdmittedUnderRestricted(t *testing.T) {
	env := harness.Default()
	ns := restrictedNamespace(t, env)
	c, warns := warningClient(t, env)
	labels := labelsFor("accepted")

	sa := builders.ServiceAccount("web", ns, labels)
	cm := builders.ConfigMap("web-config", ns, labels, map[string]string{"LEVEL": "info"})
	secret := builders.Secret("web-secret", ns, labels, map[string]string{"password": "s3cret"})
	app := builders.Container("web", "registry.example.com/web:1.0.0",
		builders.WithPort("http", 8080),
		builders.WithPorts(corev1.ContainerPort{Name: "metrics", ContainerPort: 9090}),
		builders.WithArgs("--verbose"),
		builders.WithEnv(
			builders.EnvLiteral("MODE", "fast"),
			builders.EnvFromConfigMap("LEVEL", cm.Name, "LEVEL"),
			builders.EnvFromSecret("PASSWORD", secret.Name, "password"),
			builders.EnvFromField("NAMESPACE", "metadata.namespace"),
		),
		builders.WithLivenessProbe(builders.HTTPProbe("/healthz", 8080)),
		builders.WithReadinessProbe(builders.TCPProbe(8080)),
		builders.WithStartupProbe(builders.GRPCProbe(9090)),
		builders.WithRequests("10m", "16Mi"),
		builders.WithLimits("1", "64Mi"),
		builders.WithVolumeMount("tmp", "/tmp"),
		builders.WithReadOnlyVolumeMount("config", "/etc/web"),
		builders.WithReadOnlyVolumeMount("certs", "/etc/certs"),
		builders.WithImagePullPolicy(corev1.PullIfNotPresent),
	)
	writable := builders.Container("sidecar", "registry.example.com/sidecar:1", builders.WithWritableRootFilesystem())
	pod := builders.PodTemplate(labels, []corev1.Container{app, writable},
		builders.WithServiceAccount(sa.Name),
		builders.WithRunAsUser(1000), builders.WithRunAsGroup(1000), builders.WithFSGroup(1000),
		builders.WithInitContainers(builders.Container("init", "registry.example.com/init:1", builders.WithCommand("/init"))),
		builders.WithVolumes(
			builders.EmptyDirVolume("tmp"),
			builders.ConfigMapVolume("config", cm.Name),
			builders.SecretVolume("certs", secret.Name),
		),
		builders.WithPodAnnotation("example.com/note", "x"),
		builders.WithRolloutOnChange(cm, secret),
	)
	dbLabels := labels
	dbLabels.Component = "database"
	objects := []client.Object{
		sa, cm, secret,
		builders.Deployment("web", ns, labels, pod, builders.WithReplicas(0), builders.WithRecreateStrategy()),
		builders.Service("web", ns, labels, builders.WithServicePort("http", 80), builders.WithServicePort("metrics", 9090)),
		builders.Service("web-lb", ns, labels, builders.WithServiceType(corev1.ServiceTypeLoadBalancer), builders.WithServicePort("http", 80)),
		builders.Service("db", ns, dbLabels, builders.WithHeadless(), builders.WithServicePort("db", 5432)),
		builders.StatefulSet("db", ns, dbLabels, builders.PodTemplate(dbLabels, []corev1.Container{
			builders.Container("db", "registry.example.com/db:1", builders.WithPort("db", 5432), builders.WithVolumeMount("data", "/data")),
		}), builders.WithStatefulSetReplicas(0), builders.WithServiceName("db"), builders.WithParallelPodManagement(),
			builders.WithVolumeClaimTemplates(builders.VolumeClaim("data", "1Gi"))),
		&corev1.Pod{ObjectMeta: labels.Meta("web-pod", ns), Spec: pod.Spec},
	}
	for _, obj := range objects {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Errorf("create %T %s: %v", obj, obj.GetName(), err)
		}
	}
	if w := warns.take(); len(w) > 0 {
		t.Errorf("API server warnings:\n%s", strings.Join(w, "\n"))
	}

	// The check does fail: a workload running as root is warned about, a pod running as root is forbidden.
	root := webPod(labels, builders.WithRunAsUser(0))
	if err := c.Create(t.Context(), builders.Deployment("root", ns, labels, root, builders.WithReplicas(0))); err != nil {
		t.Errorf("create Deployment running as root: %v", err)
	}
	if w := strings.Join(warns.take(), "\n"); !strings.Contains(w, `would violate PodSecurity "restricted:latest"`) || !strings.Contains(w, "runAsUser=0") {
		t.Errorf("no PodSecurity warning for a Deployment running as root; warnings: %q", w)
	}
	err := c.Create(t.Context(), &corev1.Pod{ObjectMeta: labels.Meta("root", ns), Spec: root.Spec})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "runAsUser=0") {
		t.Errorf("create Pod running as root: got %v, want a PodSecurity Forbidden error naming runAsUser=0", err)
	}
}

// live reads obj's current state, typed (as a controller's client returns it, without TypeMeta) and
// unstructured.
func live(t *testing.T, c client.Client, obj client.Object) (client.Object, *unstructured.Unstructured, error) {
	t.Helper()
	typed := obj.DeepCopyObject().(client.Object)
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), typed); err != nil {
		return nil, nil, err
	}
	gvk, err := apiutil.GVKForObject(obj, c.Scheme()) // Create leaves obj without TypeMeta
	if err != nil {
		return nil, nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), u); err != nil {
		return nil, nil, err
	}
	return typed, u, nil
}

// waitFor polls check on obj's live state until it reports want for both the typed and the
// unstructured object (and, when wantReason is not empty, that reason). It returns the typed object.
func waitFor(t *testing.T, c client.Client, obj client.Object, check func(client.Object) (bool, string), want bool, wantReason string) client.Object {
	t.Helper()
	var last client.Object
	harness.Eventually(t, timeout, func() (bool, string) {
		typed, u, err := live(t, c, obj)
		if err != nil {
			return false, err.Error()
		}
		last = typed
		tr, treason := check(typed)
		ur, ureason := check(u)
		state := fmt.Sprintf("typed: %v %q, unstructured: %v %q\n%s", tr, treason, ur, ureason, harness.ObjectYAML(typed))
		if tr != want || ur != want || treason != ureason {
			return false, state
		}
		if wantReason != "" && treason != wantReason {
			return false, state
		}
		return true, ""
	})
	return last
}

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

func TestDeploymentAvailableWithRealControllers(t *testing.T) {
	env := harness.Default()
	ns := restrictedNamespace(t, env)
	labels := labelsFor("deploy")
	d := builders.Deployment("web", ns, labels, webPod(labels), builders.WithReplicas(2))
	create(t, env.Client, d)
	got := waitFor(t, env.Client, d, builders.DeploymentAvailable, true, "").(*appsv1.Deployment)
	if got.Status.AvailableReplicas != 2 || got.Status.UpdatedReplicas != 2 {
		t.Errorf("ready with status %+v", got.Status)
	}
	waitFor(t, env.Client, d, builders.ConditionsReady, true, "")

	// A Deployment whose pods can never be scheduled settles on the available count.
	stuck := builders.Deployment("stuck", ns, labels, webPod(labels, func(p *corev1.PodTemplateSpec) {
		p.Spec.NodeSelector = map[string]string{"example.com/no-such-node": "true"}
	}), builders.WithReplicas(2))
	create(t, env.Client, stuck)
	waitFor(t, env.Client, stuck, builders.DeploymentAvailable, false, "0/2 replicas available")
}

func TestRolloutOnChangeRollsTheDeployment(t *testing.T) {
	env := harness.Default()
	ns := restrictedNamespace(t, env)
	labels := labelsFor("rollout")
	desired := func(level string) (*corev1.ConfigMap, *appsv1.Deployment) {
		cm := builders.ConfigMap("web-config", ns, labels, map[string]string{"LEVEL": level})
		pod := webPod(labels, builders.WithRolloutOnChange(cm), func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{builders.EnvFromConfigMap("LEVEL", cm.Name, "LEVEL")}
		})
		return cm, builders.Deployment("web", ns, labels, pod, builders.WithReplicas(1))
	}
	cm, d := desired("info")
	create(t, env.Client, cm, d)
	waitFor(t, env.Client, d, builders.DeploymentAvailable, true, "")

	// Unchanged data, even as read back from the API server: the same template, nothing to roll.
	liveCM := &corev1.ConfigMap{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(cm), liveCM); err != nil {
		t.Fatal(err)
	}
	_, first := desired("info")
	_, again := desired("info")
	if diff := cmp.Diff(first.Spec.Template, again.Spec.Template); diff != "" {
		t.Fatalf("rebuilding with the same data changed the template (-first +again):\n%s", diff)
	}
	if builders.ConfigHash(liveCM) != builders.ConfigHash(cm) {
		t.Fatalf("the live ConfigMap hashes differently from the desired one")
	}

	// Changed data: a new template, which the Deployment controller rolls out as a new ReplicaSet.
	newCM, newD := desired("debug")
	liveCM.Data = newCM.Data
	if err := env.Client.Update(t.Context(), liveCM); err != nil {
		t.Fatalf("update ConfigMap: %v", err)
	}
	liveD := &appsv1.Deployment{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(d), liveD); err != nil {
		t.Fatal(err)
	}
	liveD.Spec.Template = newD.Spec.Template
	if err := env.Client.Update(t.Context(), liveD); err != nil {
		t.Fatalf("update Deployment: %v", err)
	}
	waitFor(t, env.Client, d, builders.DeploymentAvailable, true, "")

	var sets appsv1.ReplicaSetList
	if err := env.Client.List(t.Context(), &sets, client.InNamespace(ns), client.MatchingLabels(labels.Selector())); err != nil {
		t.Fatal(err)
	}
	var hashes []string
	for _, rs := range sets.Items {
		hashes = append(hashes, rs.Spec.Template.Annotations[builders.ConfigHashAnnotation])
	}
	slices.Sort(hashes)
	want := []string{builders.ConfigHash(cm), builders.ConfigHash(newCM)}
	slices.Sort(want)
	if diff := cmp.Diff(want, hashes); diff != "" {
		t.Errorf("ReplicaSets' config hashes (-want +got):\n%s", diff)
	}
}

func TestStatefulSetReadyWithRealControllers(t *testing.T) {
	env := harness.Default()
	ns := restrictedNamespace(t, env)
	labels := labelsFor("sts")
	svc := builders.Service("web", ns, labels, builders.WithHeadless(), builders.WithServicePort("http", 8080))
	sts := builders.StatefulSet("web", ns, labels, webPod(labels),
		builders.WithStatefulSetReplicas(2), builders.WithServiceName(svc.Name), builders.WithParallelPodManagement())
	create(t, env.Client, svc, sts)
	waitFor(t, env.Client, svc, builders.ServiceReady, true, "")
	waitFor(t, env.Client, sts, builders.StatefulSetReady, true, "")

	// A new template: ready again only once every pod runs the new revision.
	live := &appsv1.StatefulSet{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(sts), live); err != nil {
		t.Fatal(err)
	}
	oldRevision := live.Status.CurrentRevision
	live.Spec.Template.Spec.Containers[0].Image = "registry.example.com/web:1.0.1"
	if err := env.Client.Update(t.Context(), live); err != nil {
		t.Fatalf("update StatefulSet: %v", err)
	}
	got := waitFor(t, env.Client, sts, builders.ConditionsReady, true, "").(*appsv1.StatefulSet)
	if got.Status.CurrentRevision == oldRevision || got.Status.UpdatedReplicas != 2 {
		t.Errorf("ready before the rollout finished: %+v", got.Status)
	}
}

func TestServiceReadyOnLiveServices(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	labels := labelsFor("svc")
	cluster := builders.Service("web", ns, labels, builders.WithServicePort("http", 80))
	lb := builders.Service("web-lb", ns, labels, builders.WithServiceType(corev1.ServiceTypeLoadBalancer), builders.WithServicePort("http", 80))
	external := builders.Service("ext", ns, labels, builders.WithServiceType(corev1.ServiceTypeExternalName), func(s *corev1.Service) {
		s.Spec.ExternalName = "db.example.com"
		s.Spec.Selector = nil
	})
	create(t, env.Client, cluster, lb, external)
	waitFor(t, env.Client, cluster, builders.ServiceReady, true, "")
	waitFor(t, env.Client, external, builders.ServiceReady, true, "")
	// No cloud provider runs here, so no load balancer ever reports an address.
	waitFor(t, env.Client, lb, builders.ServiceReady, false, "waiting for load balancer ingress")
}

func TestJobCompleteWithRealControllers(t *testing.T) {
	env := harness.Default()
	ns := restrictedNamespace(t, env)
	labels := labelsFor("job")
	pod := builders.PodTemplate(labels, []corev1.Container{builders.Container("migrate", "registry.example.com/migrate:1")},
		func(p *corev1.PodTemplateSpec) { p.Spec.RestartPolicy = corev1.RestartPolicyNever })
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: labels.Meta("migrate", ns),
		Spec:       batchv1.JobSpec{Template: pod, BackoffLimit: ptr.To[int32](0)},
	}
	create(t, env.Client, job)
	waitFor(t, env.Client, job, builders.JobComplete, true, "")
	waitFor(t, env.Client, job, builders.ConditionsReady, true, "")
}
