//go:build integration

package baseline_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/bench/baseline"
	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestMain starts a real kube-apiserver and etcd (plain mode: no controller-manager) with the Welcome
// CRD installed.
func TestMain(m *testing.M) {
	harness.Main(m,
		harness.WithCRDPaths("../../examples/welcome/config/crd/bases"),
		harness.WithSchemeAdders(v1alpha1.AddToScheme),
	)
}

const waitTimeout = 60 * time.Second

func startBaseline(t *testing.T, env *harness.Env) {
	t.Helper()
	env.StartManager(t, func(mgr manager.Manager) error {
		r := &baseline.Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}
		return r.SetupWithManager(mgr)
	})
}

// controllerOf returns the kind and name of obj's controller reference, "" when it has none.
func controllerOf(obj client.Object) string {
	if ref := metav1.GetControllerOf(obj); ref != nil {
		return ref.Kind + "/" + ref.Name
	}
	return ""
}

// TestBaselineCreatesChildren checks on the real API server that the baseline creates the page
// ConfigMap, the Deployment and the Service of a Welcome, each controlled by it and carrying the
// standard labels, and writes a Ready=False status while the Deployment has no ready pod.
func TestBaselineCreatesChildren(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	startBaseline(t, env)

	w := &v1alpha1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: ns},
		Spec:       v1alpha1.WelcomeSpec{Name: "Alice", Email: "alice@example.com"},
	}
	if err := env.Client.Create(t.Context(), w); err != nil {
		t.Fatalf("create welcome: %v", err)
	}
	key := client.ObjectKeyFromObject(w)
	children := map[string]client.Object{
		"configmap":  &corev1.ConfigMap{},
		"deployment": &appsv1.Deployment{},
		"service":    &corev1.Service{},
	}
	for name, obj := range children {
		harness.WaitForObject(t, env.Client, key, obj, waitTimeout, nil)
		got := map[string]string{
			"controller": controllerOf(obj),
			"instance":   obj.GetLabels()["app.kubernetes.io/instance"],
		}
		want := map[string]string{"controller": "Welcome/alice", "instance": "alice"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	cm := children["configmap"].(*corev1.ConfigMap)
	if page := cm.Data["page.html"]; !strings.Contains(page, "alice@example.com") {
		t.Errorf("page does not show the e-mail address:\n%s", page)
	}
	dep := children["deployment"].(*appsv1.Deployment)
	if got := ptr.Deref(dep.Spec.Replicas, 0); got != 1 {
		t.Errorf("deployment replicas = %d, want the defaulted 1", got)
	}

	var live v1alpha1.Welcome
	harness.WaitForObject(t, env.Client, key, &live, waitTimeout, func(w *v1alpha1.Welcome) bool {
		return meta.FindStatusCondition(w.Status.Conditions, baseline.ConditionReady) != nil
	})
	ready := meta.FindStatusCondition(live.Status.Conditions, baseline.ConditionReady)
	got := []any{ready.Status, ready.Reason, ready.ObservedGeneration, live.Status.ServiceURL}
	want := []any{metav1.ConditionFalse, "Progressing", live.Generation, "http://alice." + ns + ".svc:8088/hello/"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

// TestBaselineReportsReady plays the deployment controller (absent in plain mode) by writing a ready
// replica into the Deployment's status, and checks that the baseline then reports Ready=True for the
// current generation, and that a changed spec reaches the Deployment.
func TestBaselineReportsReady(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	startBaseline(t, env)

	w := &v1alpha1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Name: "bob", Namespace: ns},
		Spec:       v1alpha1.WelcomeSpec{Name: "Bob"},
	}
	if err := env.Client.Create(t.Context(), w); err != nil {
		t.Fatalf("create welcome: %v", err)
	}
	key := client.ObjectKeyFromObject(w)
	var dep appsv1.Deployment
	harness.WaitForObject(t, env.Client, key, &dep, waitTimeout, nil)
	setReadyReplicas(t, env, &dep, 1)

	var live v1alpha1.Welcome
	harness.WaitForObject(t, env.Client, key, &live, waitTimeout, func(w *v1alpha1.Welcome) bool {
		c := meta.FindStatusCondition(w.Status.Conditions, baseline.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation
	})
	if live.Status.ReadyReplicas != 1 {
		t.Errorf("status.readyReplicas = %d, want 1", live.Status.ReadyReplicas)
	}

	// Scale to 2: the Deployment follows and the Welcome is not Ready until two replicas are.
	live.Spec.Replicas = ptr.To[int32](2)
	if err := env.Client.Update(t.Context(), &live); err != nil {
		t.Fatalf("update welcome: %v", err)
	}
	harness.WaitForObject(t, env.Client, key, &dep, waitTimeout, func(d *appsv1.Deployment) bool {
		return ptr.Deref(d.Spec.Replicas, 0) == 2
	})
	harness.WaitForObject(t, env.Client, key, &live, waitTimeout, func(w *v1alpha1.Welcome) bool {
		c := meta.FindStatusCondition(w.Status.Conditions, baseline.ConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == w.Generation
	})
	setReadyReplicas(t, env, &dep, 2)
	harness.WaitForObject(t, env.Client, key, &live, waitTimeout, func(w *v1alpha1.Welcome) bool {
		c := meta.FindStatusCondition(w.Status.Conditions, baseline.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation
	})
}

// setReadyReplicas writes n ready replicas into the Deployment's status, retrying on conflicts with
// the reconciler's writes.
func setReadyReplicas(t *testing.T, env *harness.Env, dep *appsv1.Deployment, n int32) {
	t.Helper()
	harness.Eventually(t, waitTimeout, func() (bool, string) {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(dep), dep); err != nil {
			return false, err.Error()
		}
		dep.Status.Replicas, dep.Status.ReadyReplicas, dep.Status.AvailableReplicas = n, n, n
		dep.Status.ObservedGeneration = dep.Generation
		if err := env.Client.Status().Update(t.Context(), dep); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}
