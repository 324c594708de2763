//go:build integration

package controller_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	"github.com/convergo-dev/convergo/builders"
	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/welcome/controller"
	"github.com/convergo-dev/convergo/finalizer"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/harness"
	"github.com/convergo-dev/convergo/testing/optest"
)

const timeout = optest.Timeout

// newWelcome creates a Welcome in ns and, at cleanup, deletes it and waits until the operator has
// released it (cleanups run in reverse order, so the operator started before is still running).
func newWelcome(t *testing.T, env *harness.Env, ns, name string, spec v1alpha1.WelcomeSpec) *v1alpha1.Welcome {
	t.Helper()
	return optest.Create(t, env.Client, &v1alpha1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec})
}

// newSecret creates the password Secret.
func newSecret(t *testing.T, c client.Client, ns, name, password string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		StringData: map[string]string{"password": password},
	}
	if err := c.Create(t.Context(), s); err != nil {
		t.Fatalf("create secret: %v", err)
	}
	return s
}

// conditionsAre reports whether the conditions hold want ("Status/Reason" or "absent" by type) and
// were all set for the current generation.
var conditionsAre = optest.ConditionsAre[*v1alpha1.Welcome]

var (
	ready          = map[string]string{status.Ready: "True/Reconciled", status.Reconciling: "absent", status.Stalled: "absent"}
	progressing    = map[string]string{status.Ready: "False/Progressing", status.Reconciling: "True/Progressing", status.Stalled: "absent"}
	secretNotFound = map[string]string{status.Ready: "False/SecretNotFound", status.Stalled: "True/SecretNotFound", status.Reconciling: "absent"}
)

// TestLifecycle follows one Welcome from creation to deletion: the page and the Service, then the
// Deployment, a page change that rolls the pods, scaling, NodePort, a port change that reaches the
// Service during the rollout, and teardown in reverse order.
func TestLifecycle(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	env.StartManager(t, controller.SetupWithManager, shippedCache(), shippedCache())
	secret := newSecret(t, env.Client, ns, "alice-password", "s3cret")
	w := newWelcome(t, env, ns, "alice", v1alpha1.WelcomeSpec{
		Name:              "Alice <admin>",
		Replicas:          ptr.To[int32](2),
		UserID:            ptr.To[int64](1000),
		Groups:            []string{"admins", "dev"},
		Email:             "alice@example.com",
		PasswordSecretRef: &v1alpha1.SecretKeyRef{Name: secret.Name, Key: "password"},
	})
	key := client.ObjectKeyFromObject(w)

	// The page and the Service come first, then the Deployment; the Welcome waits for the Deployment.
	var page corev1.ConfigMap
	harness.WaitForObject(t, env.Client, key, &page, timeout, nil)
	wantPage := "<dl class=\"profile\">\n<dt>E-mail</dt><dd><a href=\"mailto:alice@example.com\">alice@example.com</a></dd>\n<dt>Groups</dt><dd>admins, dev</dd>\n<dt>User ID</dt><dd>1000</dd>\n</dl>\n"
	if diff := cmp.Diff(map[string]string{controller.PageKey: wantPage}, page.Data); diff != "" {
		t.Errorf("page (-want +got):\n%s", diff)
	}
	var deploy appsv1.Deployment
	harness.WaitForObject(t, env.Client, key, &deploy, timeout, nil)
	harness.WaitForObject(t, env.Client, key, w, timeout, conditionsAre(progressing))
	var svc corev1.Service
	if err := env.Client.Get(t.Context(), key, &svc); err != nil {
		t.Fatalf("service before the deployment is available: %v", err)
	}
	checkService(t, &svc, w, corev1.ServiceTypeClusterIP, 8088)
	checkDeployment(t, &deploy, 2, 8088, "Alice <admin>", &secret.ObjectMeta)
	if got := ptr.Deref(deploy.Spec.Template.Spec.SecurityContext.RunAsUser, 0); got != 1000 {
		t.Errorf("pods run as user %d, want spec.userID 1000", got)
	}
	hash := deploy.Spec.Template.Annotations[builders.ConfigHashAnnotation]
	if hash == "" {
		t.Errorf("pod template has no %s annotation", builders.ConfigHashAnnotation)
	}

	// Once the Deployment is available, the Welcome is Ready.
	optest.MarkDeploymentAvailable(t, env.Client, key)
	harness.WaitForObject(t, env.Client, key, w, timeout, conditionsAre(ready))
	wantStatus := v1alpha1.WelcomeStatus{ReadyReplicas: 2, ServiceURL: "http://alice." + ns + ".svc:8088/hello/"}
	if diff := cmp.Diff(wantStatus, w.Status, optest.IgnoreConditions()); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}

	// A page change updates the ConfigMap and rolls the pods; scaling follows.
	optest.Update(t, env.Client, w, func(w *v1alpha1.Welcome) {
		w.Spec.Email = "alice@example.org"
		w.Spec.Replicas = ptr.To[int32](3)
	})
	harness.WaitForObject(t, env.Client, key, &page, timeout, func(cm *corev1.ConfigMap) bool {
		return strings.Contains(cm.Data[controller.PageKey], "alice@example.org")
	})
	harness.WaitForObject(t, env.Client, key, &deploy, timeout, func(d *appsv1.Deployment) bool {
		return d.Spec.Template.Annotations[builders.ConfigHashAnnotation] != hash && ptr.Deref(d.Spec.Replicas, 0) == 3
	})
	optest.MarkDeploymentAvailable(t, env.Client, key)
	harness.WaitForObject(t, env.Client, key, w, timeout, func(w *v1alpha1.Welcome) bool {
		return conditionsAre(ready)(w) && w.Status.ReadyReplicas == 3
	})

	// NodePort with a pinned node port, and a new port.
	optest.Update(t, env.Client, w, func(w *v1alpha1.Welcome) {
		w.Spec.ServiceType = corev1.ServiceTypeNodePort
		w.Spec.NodePort = ptr.To[int32](30080)
		w.Spec.Port = 9090
	})
	harness.WaitForObject(t, env.Client, key, &deploy, timeout, func(d *appsv1.Deployment) bool {
		return d.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort == 9090
	})
	checkDeployment(t, &deploy, 3, 9090, "Alice <admin>", &secret.ObjectMeta)
	// The Service does not wait for the rollout.
	harness.WaitForObject(t, env.Client, key, &svc, timeout, func(s *corev1.Service) bool { return s.Spec.Type == corev1.ServiceTypeNodePort })
	checkService(t, &svc, w, corev1.ServiceTypeNodePort, 9090)
	harness.WaitForObject(t, env.Client, key, w, timeout, conditionsAre(progressing))
	optest.MarkDeploymentAvailable(t, env.Client, key)
	harness.WaitForObject(t, env.Client, key, w, timeout, conditionsAre(ready))
	wantStatus = v1alpha1.WelcomeStatus{
		ReadyReplicas: 3, ServiceURL: "http://alice." + ns + ".svc:9090/hello/",
		NodePort: 30080, NodePortURL: "http://<node-ip>:30080/hello/",
	}
	if diff := cmp.Diff(wantStatus, w.Status, optest.IgnoreConditions()); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}

	// Deletion in reverse dependency order. Another controller's finalizer holds the Deployment, so the
	// step can be seen: the page it mounts waits until it is gone; the Service, which depends on
	// nothing, goes at once.
	const hold = "test.convergo.dev/hold"
	optest.PatchFinalizers(t, env.Client, &deploy, []string{hold})
	if err := env.Client.Delete(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	harness.WaitForObject(t, env.Client, key, &deploy, timeout, func(d *appsv1.Deployment) bool { return d.DeletionTimestamp != nil })
	harness.WaitForObject(t, env.Client, key, w, timeout, func(w *v1alpha1.Welcome) bool {
		return optest.Condition(w, status.Reconciling) == "True/Deleting"
	})
	harness.WaitForDeletion(t, env.Client, &svc, timeout)
	optest.RequireNotDeleting(t, env.Client, key, &corev1.ConfigMap{})

	optest.PatchFinalizers(t, env.Client, &deploy, nil)
	harness.WaitForDeletion(t, env.Client, &deploy, timeout)
	harness.WaitForDeletion(t, env.Client, &page, timeout)
	harness.WaitForDeletion(t, env.Client, w, timeout)
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(secret), &corev1.Secret{}); err != nil {
		t.Errorf("the user's secret is gone with the welcome (get: %v)", err)
	}
}

// TestMissingSecret creates a Welcome whose password Secret does not exist: it is Stalled with reason
// SecretNotFound (no crash loop, no children), recovers as soon as the Secret is created, and stalls
// again when the Secret is deleted.
func TestMissingSecret(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	env.StartManager(t, controller.SetupWithManager, shippedCache(), shippedCache())
	w := newWelcome(t, env, ns, "bob", v1alpha1.WelcomeSpec{
		Name:              "Bob",
		PasswordSecretRef: &v1alpha1.SecretKeyRef{Name: "bob-password", Key: "password"},
	})
	key := client.ObjectKeyFromObject(w)
	harness.WaitForObject(t, env.Client, key, w, timeout, conditionsAre(secretNotFound))
	want := `secret "bob-password" named by spec.passwordSecretRef does not exist in namespace "` + ns + `"`
	if got := meta.FindStatusCondition(w.GetConditions(), status.Stalled).Message; got != want {
		t.Errorf("Stalled message:\n got: %s\nwant: %s", got, want)
	}
	optest.WaitForEvent(t, env.Client, w, corev1.EventTypeWarning, controller.ReasonSecretNotFound)
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &appsv1.Deployment{}} {
		if err := env.Client.Get(t.Context(), key, obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T exists while the secret is missing (get: %v)", obj, err)
		}
	}

	// The Secret watch brings the Welcome back.
	secret := newSecret(t, env.Client, ns, "bob-password", "hunter2")
	harness.WaitForObject(t, env.Client, key, &appsv1.Deployment{}, timeout, nil)
	optest.MarkDeploymentAvailable(t, env.Client, key)
	harness.WaitForObject(t, env.Client, key, w, timeout, conditionsAre(ready))

	// Deleting the Secret stalls it again; the children stay.
	if err := env.Client.Delete(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	harness.WaitForObject(t, env.Client, key, w, timeout, conditionsAre(secretNotFound))
	if err := env.Client.Get(t.Context(), key, &appsv1.Deployment{}); err != nil {
		t.Errorf("deployment gone after the secret was deleted: %v", err)
	}
}

// TestPasswordNeverLeaks runs a Welcome with a distinctive password and searches for it everywhere the
// operator writes: the Welcome and its status, the children, events and the operator's logs.
func TestPasswordNeverLeaks(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	var logs lockedBuffer
	logger := funcr.New(func(prefix, args string) { logs.WriteString(prefix + " " + args + "\n") }, funcr.Options{Verbosity: 10})
	env.StartManager(t, controller.SetupWithManager, shippedCache(), harness.WithManagerLogger(logger))
	password := "pw-" + rand.String(24)
	newSecret(t, env.Client, ns, "carol-password", password)
	w := newWelcome(t, env, ns, "carol", v1alpha1.WelcomeSpec{
		Name: "Carol", PasswordSecretRef: &v1alpha1.SecretKeyRef{Name: "carol-password", Key: "password"},
	})
	key := client.ObjectKeyFromObject(w)
	harness.WaitForObject(t, env.Client, key, &appsv1.Deployment{}, timeout, nil)
	optest.MarkDeploymentAvailable(t, env.Client, key)
	harness.WaitForObject(t, env.Client, key, w, timeout, conditionsAre(ready))

	var deploy appsv1.Deployment
	if err := env.Client.Get(t.Context(), key, &deploy); err != nil {
		t.Fatal(err)
	}
	wantEnv := corev1.EnvVar{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "carol-password"}, Key: "password",
	}}}
	if !containsEnv(deploy.Spec.Template.Spec.Containers[0].Env, wantEnv) {
		t.Errorf("the pods do not read the password from the secret: env %+v", deploy.Spec.Template.Spec.Containers[0].Env)
	}

	lists := []client.ObjectList{
		&v1alpha1.WelcomeList{}, &corev1.ConfigMapList{}, &appsv1.DeploymentList{}, &corev1.ServiceList{},
		&corev1.EventList{}, &eventsv1.EventList{},
	}
	for _, list := range lists {
		if err := env.Client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(list)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), password) {
			t.Errorf("the password appears in a %T:\n%s", list, b)
		}
	}
	if strings.Contains(logs.String(), password) {
		t.Errorf("the password appears in the operator's logs:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "carol") {
		t.Errorf("the operator's logs were not captured (nothing about carol):\n%s", logs.String())
	}
}

// TestZeroRequestsOnceConverged reconciles a converged Welcome again, for several reasons, and checks
// that the operator sends no request at all, neither a write nor a read, until the reconcile that read
// the change has finished.
func TestZeroRequestsOnceConverged(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	op := optest.StartOperator(t, env, controller.SetupWithManager, shippedCache())
	newSecret(t, env.Client, ns, "dave-password", "pw")
	w := newWelcome(t, env, ns, "dave", v1alpha1.WelcomeSpec{
		Name: "Dave", Groups: []string{"ops"}, Email: "dave@example.com", UserID: ptr.To[int64](2000),
		ServiceType:       corev1.ServiceTypeNodePort,
		PasswordSecretRef: &v1alpha1.SecretKeyRef{Name: "dave-password", Key: "password"},
	})
	key := client.ObjectKeyFromObject(w)
	harness.WaitForObject(t, env.Client, key, &appsv1.Deployment{}, timeout, nil)
	optest.MarkDeploymentAvailable(t, env.Client, key)
	harness.WaitForObject(t, env.Client, key, w, timeout, conditionsAre(ready))
	t.Logf("requests to converge:\n%s", op.Requests.Snapshot().InNamespace(ns))

	op.ExpectNoRequests(t, key, map[string]optest.Trigger{
		"annotation on the welcome": func(t testing.TB) client.Object {
			return optest.MergePatch(t, env.Client, w, `{"metadata":{"annotations":{"example.com/note":"hello"}}}`)
		},
		"label added to the page by someone else": func(t testing.TB) client.Object {
			return optest.MergePatch(t, env.Client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dave"}}, `{"metadata":{"labels":{"example.com/team":"web"}}}`)
		},
		"annotation added to the service by someone else": func(t testing.TB) client.Object {
			return optest.MergePatch(t, env.Client, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dave"}}, `{"metadata":{"annotations":{"example.com/scrape":"true"}}}`)
		},
		// A status change that leaves the Deployment's readiness as it was wakes no reconcile at all
		// (reconcile.WithEveryChildChange); a label someone adds next wakes one, which reads both.
		"deployment status changed by the deployment controller": func(t testing.TB) client.Object {
			optest.MarkDeploymentProgressing(t, env.Client, key)
			return optest.MergePatch(t, env.Client, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dave"}}, `{"metadata":{"labels":{"example.com/seen":"progressing"}}}`)
		},
	})
}

// TestGeneratedRoleIsEnough runs the operator as a ServiceAccount bound to nothing but the generated
// config/rbac/role.yaml, through a whole lifecycle including the Secret watch: a missing permission
// fails it.
func TestGeneratedRoleIsEnough(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	cfg := optest.ServiceAccountConfig(t, env.Config, env.Client, ns, "../config/rbac/role.yaml")
	env.StartManager(t, controller.SetupWithManager, shippedCache(), harness.WithManagerConfig(cfg))
	w := newWelcome(t, env, ns, "erin", v1alpha1.WelcomeSpec{
		Name: "Erin", PasswordSecretRef: &v1alpha1.SecretKeyRef{Name: "erin-password", Key: "password"},
	})
	key := client.ObjectKeyFromObject(w)
	harness.WaitForObject(t, env.Client, key, w, timeout, conditionsAre(secretNotFound))
	newSecret(t, env.Client, ns, "erin-password", "pw")
	harness.WaitForObject(t, env.Client, key, &appsv1.Deployment{}, timeout, nil)
	optest.MarkDeploymentAvailable(t, env.Client, key)
	harness.WaitForObject(t, env.Client, key, w, timeout, conditionsAre(ready))
	if err := env.Client.Delete(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	harness.WaitForDeletion(t, env.Client, w, timeout)
	event := optest.WaitForEvent(t, env.Client, w, corev1.EventTypeWarning, controller.ReasonSecretNotFound)
	if event.ReportingController != controller.Name {
		t.Errorf("event reported by %q, want %q", event.ReportingController, controller.Name)
	}
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &appsv1.Deployment{}, &corev1.Service{}} {
		if err := env.Client.Get(t.Context(), key, obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T still exists after the welcome was deleted (get: %v)", obj, err)
		}
	}
}

func checkDeployment(t *testing.T, d *appsv1.Deployment, replicas, port int32, name string, secret *metav1.ObjectMeta) {
	t.Helper()
	if got := ptr.Deref(d.Spec.Replicas, -1); got != replicas {
		t.Errorf("deployment replicas = %d, want %d", got, replicas)
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("deployment has %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	wantEnv := []corev1.EnvVar{
		{Name: "NAME", Value: name},
		{Name: "PORT", Value: fmt.Sprint(port)},
		{Name: "PAGE_FILE", Value: controller.PageDir + "/" + controller.PageKey},
		{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret.Name}, Key: "password",
		}}},
	}
	if diff := cmp.Diff(wantEnv, c.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.ContainerPort{{Name: "http", ContainerPort: port, Protocol: corev1.ProtocolTCP}}, c.Ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
	for probeName, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Port != intstr.FromInt32(port) {
			t.Errorf("%s probe %+v, want an HTTP probe on port %d", probeName, p, port)
		}
	}
	wantMount := []corev1.VolumeMount{{Name: "page", MountPath: controller.PageDir, ReadOnly: true}}
	if diff := cmp.Diff(wantMount, c.VolumeMounts); diff != "" {
		t.Errorf("volume mounts (-want +got):\n%s", diff)
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].ConfigMap == nil || pod.Volumes[0].ConfigMap.Name != d.Name {
		t.Errorf("volumes %+v: want the page ConfigMap %s", pod.Volumes, d.Name)
	}
	if got := d.Spec.Template.Annotations[controller.PasswordVersionAnnotation]; got != secret.ResourceVersion {
		t.Errorf("password version annotation = %q, want the secret's resourceVersion %q", got, secret.ResourceVersion)
	}
	sc := c.SecurityContext
	if pod.SecurityContext == nil || !ptr.Deref(pod.SecurityContext.RunAsNonRoot, false) ||
		sc == nil || ptr.Deref(sc.AllowPrivilegeEscalation, true) || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) {
		t.Errorf("pod is not locked down: pod %+v, container %+v", pod.SecurityContext, sc)
	}
}

func checkService(t *testing.T, svc *corev1.Service, w *v1alpha1.Welcome, typ corev1.ServiceType, port int32) {
	t.Helper()
	if svc.Spec.Type != typ {
		t.Errorf("service type %s, want %s", svc.Spec.Type, typ)
	}
	if len(svc.Spec.Ports) != 1 {
		t.Fatalf("service ports %+v, want one", svc.Spec.Ports)
	}
	got := svc.Spec.Ports[0]
	want := corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromString("http"), NodePort: got.NodePort}
	if typ == corev1.ServiceTypeNodePort && w.Spec.NodePort != nil {
		want.NodePort = *w.Spec.NodePort
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("service port (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(controller.Labels(w).Selector(), svc.Spec.Selector); diff != "" {
		t.Errorf("service selector (-want +got):\n%s", diff)
	}
}

func containsEnv(env []corev1.EnvVar, want corev1.EnvVar) bool {
	for _, e := range env {
		if cmp.Equal(e, want) {
			return true
		}
	}
	return false
}

// lockedBuffer collects log lines from the manager's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) WriteString(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestManyAtOnceMinimalWrites creates a dozen Welcomes at once, so that the controller's four workers
// (the library's default) reconcile several at a time while the children's events keep
// arriving, and checks that converging them all costs exactly the job's writes: per Welcome one apply
// per child, one finalizer patch (none with the shipped admission policy, which adds the finalizer as
// the Welcome is created) and two status patches (Reconciling, then Ready), with no conflict
// and no re-read of a Welcome.
func TestManyAtOnceMinimalWrites(t *testing.T) {
	const n = 12
	cases := map[string]struct {
		policy           bool
		finalizerPatches int
	}{
		"without the admission policy":      {finalizerPatches: n},
		"with the shipped admission policy": {policy: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			env := harness.Default()
			ns := env.Namespace(t)
			if tc.policy {
				bindFinalizerPolicy(t, env, ns)
			}
			counter := harness.NewRequestCounter()
			env.StartManager(t, controller.Setup(), shippedCache(), harness.WithManagerConfig(counter.Wrap(env.Config)))
			var wg sync.WaitGroup
			keys := make([]client.ObjectKey, n)
			for i := range n {
				keys[i] = client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("w%02d", i)}
				wg.Go(func() {
					newWelcome(t, env, ns, keys[i].Name, v1alpha1.WelcomeSpec{Name: fmt.Sprintf("User %d", i)})
				})
			}
			wg.Wait()
			for _, key := range keys {
				harness.WaitForObject(t, env.Client, key, &appsv1.Deployment{}, timeout, nil)
				optest.MarkDeploymentAvailable(t, env.Client, key)
			}
			for _, key := range keys {
				harness.WaitForObject(t, env.Client, key, &v1alpha1.Welcome{}, timeout, func(w *v1alpha1.Welcome) bool {
					return conditionsAre(ready)(w) && controllerutil.ContainsFinalizer(w, controller.Finalizer)
				})
			}
			reqs := counter.Snapshot().InNamespace(ns)
			got := map[string]int{}
			for _, verb := range []string{"get", "patch", "update", "create"} {
				for _, res := range []string{"welcomes", "welcomes/status", "configmaps", "deployments", "services"} {
					if c := reqs.Count(verb, res); c > 0 {
						got[verb+" "+res] = c
					}
				}
			}
			delete(got, "get configmaps") // a child's cache miss right after its creation is checked through the API reader
			delete(got, "get deployments")
			delete(got, "get services")
			want := map[string]int{
				"patch welcomes/status": 2 * n,
				"patch configmaps":      n, "patch deployments": n, "patch services": n,
			}
			if tc.finalizerPatches > 0 {
				want["patch welcomes"] = tc.finalizerPatches
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("requests to converge %d Welcomes (-want +got):\n%s\nall requests:\n%s", n, diff, reqs)
			}
		})
	}
}

// bindFinalizerPolicy installs the admission policy of config/admission, bound to namespace ns only
// (the tests share one API server), and waits until the API server applies it. The shipped YAML must
// hold what controller.FinalizerPolicy builds and a binding of it for every namespace.
func bindFinalizerPolicy(t *testing.T, env *harness.Env, ns string) {
	t.Helper()
	data, err := os.ReadFile("../config/admission/finalizer_policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(data), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("config/admission/finalizer_policy.yaml holds %d documents, want the policy and its binding", len(docs))
	}
	shipped := &admissionregistrationv1.MutatingAdmissionPolicy{}
	shippedBinding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
	if err := yaml.UnmarshalStrict([]byte(docs[0]), shipped); err != nil {
		t.Fatalf("config/admission/finalizer_policy.yaml: %v", err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), shippedBinding); err != nil {
		t.Fatalf("config/admission/finalizer_policy.yaml: %v", err)
	}
	want, err := controller.FinalizerPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, shipped); diff != "" {
		t.Errorf("config/admission/finalizer_policy.yaml differs from controller.FinalizerPolicy() (-want +shipped):\n%s", diff)
	}
	if diff := cmp.Diff(finalizer.AdmissionPolicyBinding(want, nil), shippedBinding); diff != "" {
		t.Errorf("config/admission/finalizer_policy.yaml's binding differs from one for every namespace (-want +shipped):\n%s", diff)
	}
	probe := &v1alpha1.Welcome{Spec: v1alpha1.WelcomeSpec{Name: "Probe"}}
	env.BindAdmissionPolicy(t, shipped, ns, probe, func(o client.Object) bool {
		return controllerutil.ContainsFinalizer(o, controller.Finalizer)
	}, timeout)
}

// shippedCache gives the test's manager the cache options the operator's main uses
// (controller.CacheOptions), so that the tests check the operator as it is shipped.
func shippedCache() harness.ManagerOption {
	return harness.WithManagerOptions(func(o *manager.Options) { controller.CacheOptions(&o.Cache) })
}
