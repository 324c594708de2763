//go:build integration

package harness_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/convergo-dev/convergo/testing/harness"
)

func TestNamespaceCreatedAndDeleted(t *testing.T) {
	env := harness.Default()
	var name string
	t.Run("inner", func(t *testing.T) {
		name = env.Namespace(t)
		if !strings.HasPrefix(name, "test-testnamespacecreatedanddeleted-inner-") {
			t.Errorf("namespace name %q does not start with the sanitised test name", name)
		}
		var ns corev1.Namespace
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &ns); err != nil {
			t.Fatalf("get namespace: %v", err)
		}
		if ns.DeletionTimestamp != nil {
			t.Errorf("namespace is already being deleted")
		}
	})
	// The subtest's cleanup issued the delete: without a namespace controller the namespace stays
	// Terminating, so check for a deletion timestamp (or absence).
	var ns corev1.Namespace
	err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &ns)
	if err == nil && ns.DeletionTimestamp == nil {
		t.Errorf("namespace %s was not deleted at cleanup", name)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("get namespace: %v", err)
	}
}

func TestStartManagerSeesObject(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	seen := make(chan types.NamespacedName, 10)
	mgr := env.StartManager(t, func(mgr manager.Manager) error {
		return ctrl.NewControllerManagedBy(mgr).
			Named("configmap-watcher").
			For(&corev1.ConfigMap{}).
			Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				if req.Namespace == ns {
					seen <- req.NamespacedName
				}
				return reconcile.Result{}, nil
			}))
	})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"}}
	if err := env.Client.Create(t.Context(), cm); err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	select {
	case got := <-seen:
		if diff := cmp.Diff(client.ObjectKeyFromObject(cm), got); diff != "" {
			t.Errorf("reconciled request (-want +got):\n%s", diff)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the controller did not see the configmap")
	}
	// The manager's client reads from its cache.
	harness.WaitForObject(t, mgr.GetClient(), client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}, time.Minute, nil)
}

func TestStartManagerWithLogger(t *testing.T) {
	env := harness.Default()
	var mu sync.Mutex
	var lines []string
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, prefix+" "+args)
	}, funcr.Options{})
	env.StartManager(t, func(mgr manager.Manager) error {
		return ctrl.NewControllerManagedBy(mgr).Named("logged").For(&corev1.ConfigMap{}).
			Complete(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
				return reconcile.Result{}, nil
			}))
	}, harness.WithManagerLogger(logger))
	harness.Eventually(t, time.Minute, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			if strings.Contains(l, "logged") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no line about the controller in the manager's log:\n%s", strings.Join(lines, "\n"))
	})
}

func TestRequestCounterCountsExactly(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	counter := harness.NewRequestCounter()
	c := env.ClientFor(t, counter.Wrap(env.Config))
	ctx := t.Context()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "counted"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Data = map[string]string{"k": "v"}
	if err := c.Patch(ctx, cm, patch); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}

	got := counter.Snapshot().Filter(harness.Request.ResourceRequest)
	want := harness.Requests{
		{Verb: "create", APIVersion: "v1", Resource: "configmaps", Namespace: ns, StatusCode: 201},
		{Verb: "get", APIVersion: "v1", Resource: "configmaps", Namespace: ns, Name: "counted", StatusCode: 200},
		{Verb: "list", APIVersion: "v1", Resource: "configmaps", Namespace: ns, StatusCode: 200},
		{Verb: "patch", APIVersion: "v1", Resource: "configmaps", Namespace: ns, Name: "counted", StatusCode: 200},
		{Verb: "delete", APIVersion: "v1", Resource: "configmaps", Namespace: ns, Name: "counted", StatusCode: 200},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(harness.Request{}, "Time")); diff != "" {
		t.Errorf("requests (-want +got):\n%s\n%s", diff, counter.Snapshot())
	}
	for i, r := range got {
		if r.Time.IsZero() || i > 0 && r.Time.Before(got[i-1].Time) {
			t.Errorf("request %d (%s %s) sent at %v, the one before it at %v: want a time, not before the previous one's", i, r.Verb, r.Name, r.Time, got[max(i-1, 0)].Time)
		}
	}
	if diff := cmp.Diff(map[string]int{"create": 1, "get": 1, "list": 1, "patch": 1, "delete": 1}, got.ByVerb()); diff != "" {
		t.Errorf("ByVerb (-want +got):\n%s", diff)
	}
	if got.Writes() != 3 {
		t.Errorf("Writes() = %d, want 3", got.Writes())
	}

	counter.Reset()
	if n := len(counter.Snapshot()); n != 0 {
		t.Errorf("after Reset: %d requests, want 0", n)
	}
}

func TestCRDInstalled(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	if diff := cmp.Diff([]string{"gadgets.harness.convergo.dev", "widgets.harness.convergo.dev"}, crdNames(env)); diff != "" {
		t.Errorf("installed CRDs (-want +got):\n%s", diff)
	}
	w := &unstructured.Unstructured{}
	w.SetAPIVersion("harness.convergo.dev/v1")
	w.SetKind("Widget")
	w.SetNamespace(ns)
	w.SetName("w")
	if err := unstructured.SetNestedField(w.Object, int64(3), "spec", "size"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), w); err != nil {
		t.Fatalf("create widget: %v", err)
	}
	// The schema is enforced: a negative size is rejected.
	bad := w.DeepCopy()
	bad.SetName("bad")
	bad.SetResourceVersion("")
	if err := unstructured.SetNestedField(bad.Object, int64(-1), "spec", "size"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), bad); !apierrors.IsInvalid(err) {
		t.Errorf("create widget with negative size: got %v, want an Invalid error", err)
	}
}

func crdNames(env *harness.Env) []string {
	var names []string
	for _, crd := range env.CRDs {
		names = append(names, crd.Name)
	}
	slices.Sort(names)
	return names
}

func TestWaitForDeletion(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "doomed"}}
	if err := env.Client.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	harness.WaitForDeletion(t, env.Client, cm, time.Minute)
}

func TestKubeconfigWritten(t *testing.T) {
	env := harness.Default()
	cfg, err := clientcmd.BuildConfigFromFlags("", env.KubeconfigPath)
	if err != nil {
		t.Fatalf("load kubeconfig %s: %v", env.KubeconfigPath, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var ns corev1.Namespace
	if err := c.Get(t.Context(), client.ObjectKey{Name: "default"}, &ns); err != nil {
		t.Errorf("get default namespace through the kubeconfig: %v", err)
	}
}

func TestWaitInCleanup(t *testing.T) {
	env := harness.Default()
	var cm *corev1.ConfigMap
	t.Run("inner", func(t *testing.T) {
		ns := env.Namespace(t)
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cleaned"}}
		if err := env.Client.Create(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			// t.Context() is cancelled here; the wait helpers still work.
			if err := env.Client.Delete(context.WithoutCancel(t.Context()), cm); err != nil {
				t.Errorf("delete: %v", err)
			}
			harness.WaitForDeletion(t, env.Client, cm, time.Minute)
		})
	})
	if t.Failed() {
		return
	}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("configmap still there after the subtest's cleanup: %v", err)
	}
}

func TestWaitForObjectReportsLastObject(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "observed"}, Data: map[string]string{"color": "blue"}}
	if err := env.Client.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	rec := &fatalRecorder{TB: t}
	harness.WaitForObject(rec, env.Client, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}, 300*time.Millisecond,
		func(cm *corev1.ConfigMap) bool { return cm.Data["color"] == "red" })
	if len(rec.fatals) != 1 {
		t.Fatalf("Fatalf called %d times, want 1", len(rec.fatals))
	}
	for _, want := range []string{"ConfigMap", ns + "/observed", "color: blue"} {
		if !strings.Contains(rec.fatals[0], want) {
			t.Errorf("failure message does not contain %q:\n%s", want, rec.fatals[0])
		}
	}
	if strings.Contains(rec.fatals[0], "managedFields") {
		t.Errorf("failure message includes managedFields:\n%s", rec.fatals[0])
	}

	rec = &fatalRecorder{TB: t}
	harness.WaitForDeletion(rec, env.Client, cm, 300*time.Millisecond)
	if len(rec.fatals) != 1 || !strings.Contains(rec.fatals[0], "still exists") {
		t.Errorf("WaitForDeletion failures = %q, want one saying it still exists", rec.fatals)
	}
}

// fatalRecorder records Fatalf instead of ending the test.
type fatalRecorder struct {
	testing.TB
	fatals []string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.fatals = append(r.fatals, fmt.Sprintf(format, args...))
}
