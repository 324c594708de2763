//go:build integration

package graph_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/reconcile/internal/fixture"
	"github.com/convergo-dev/convergo/testing/harness"
)

func service(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80}},
		},
	}
}

func clusterRole(name string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
	}
}

func configReady(live client.Object) (bool, string) {
	if live.(*corev1.ConfigMap).Data["ready"] == "true" {
		return true, ""
	}
	return false, "config not marked ready"
}

func TestIntegrationGraphApplyRespectsDependencies(t *testing.T) {
	f := fixture.New(t)
	a := f.Applier()
	build := func(ready string) *graph.Graph {
		g := graph.New()
		g.Add("web", fixture.Deployment("web")).DependsOn("config")
		g.Add("config", fixture.ConfigMap("config", map[string]string{"ready": ready})).ReadyWhen(configReady)
		return g
	}

	res, err := build("false").Apply(t.Context(), a, f.Owner)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ready || res.Child("web").Applied || !res.Child("config").Applied {
		t.Fatalf("result %+v: want config applied, web waiting", res.Children)
	}
	wantWaiting := []string{"config: config not marked ready", "web waits for config: config not marked ready"}
	if diff := cmp.Diff(wantWaiting, res.Waiting); diff != "" {
		t.Errorf("waiting (-want +got):\n%s", diff)
	}
	err = f.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: f.NS, Name: "web"}, &appsv1.Deployment{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("Deployment with an unready dependency exists (get: %v)", err)
	}
	f.WaitCached(t, res.Child("config").Object)

	res, err = build("true").Apply(t.Context(), a, f.Owner)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Ready || res.Child("web").Operation != apply.OperationCreated || res.Child("config").Operation != apply.OperationUpdated {
		t.Fatalf("result %+v: want config updated, web created, all ready", res.Children)
	}
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	f.GetLive(t, web)
	if !ownership.IsControlledBy(web, f.Owner) {
		t.Errorf("web not controlled by the owner: %v", web.OwnerReferences)
	}
}

// childState is what the API server (uncached) says about a child: present, terminating, gone,
// or foreign (an object with that name that is not the owner's).
func childState(t *testing.T, c client.Client, owner, obj client.Object) string {
	t.Helper()
	live := obj.DeepCopyObject().(client.Object)
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), live); err != nil {
		if apierrors.IsNotFound(err) {
			return "gone"
		}
		t.Fatal(err)
	}
	switch {
	case !ownership.IsControlledBy(live, owner) && !ownership.IsTrackedBy(live, owner):
		return "foreign"
	case live.GetDeletionTimestamp() != nil:
		return "terminating"
	}
	return "present"
}

// TestIntegrationGraphDelete observes an ordered deletion across calls: a finalizer holds the last
// layer, the deletion resumes with a new manager, Graph and Applier (a controller restart), and a
// foreign object recreated under a deleted child's name does not block it.
func TestIntegrationGraphDelete(t *testing.T) {
	f := fixture.New(t)
	roleName := f.NS + "-reader"
	build := func() *graph.Graph {
		g := graph.New()
		g.Add("config", fixture.ConfigMap("config", map[string]string{"k": "v"}))
		g.Add("role", clusterRole(roleName)) // cluster-scoped: tracked, no owner reference
		g.Add("web", fixture.Deployment("web")).DependsOn("config", "role")
		g.Add("svc", service("svc")).DependsOn("web")
		return g
	}
	res, err := build().Apply(t.Context(), f.Applier(), f.Owner)
	if err != nil || !res.Ready {
		t.Fatalf("apply: ready=%v err=%v", res.Ready, err)
	}
	// Layers, deleted from the last: [svc] then [web] then [config role].
	objs := map[string]client.Object{
		"config": &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: "config"}},
		"role":   &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: roleName}},
		"web":    &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: "web"}},
		"svc":    &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: "svc"}},
	}
	names := []string{"svc", "web", "config", "role"}
	layerOf := map[string]int{"svc": 2, "web": 1, "config": 0, "role": 0}
	role := objs["role"].DeepCopyObject().(client.Object)
	if err := f.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(role), role); err != nil {
		t.Fatal(err)
	}
	if len(role.GetOwnerReferences()) != 0 || !ownership.IsTrackedBy(role, f.Owner) {
		t.Fatalf("cluster-scoped child: refs %v labels %v; want tracked without owner reference", role.GetOwnerReferences(), role.GetLabels())
	}
	// Hold the Service with a finalizer.
	svc := &corev1.Service{}
	if err := f.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(objs["svc"]), svc); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(svc.DeepCopy())
	svc.Finalizers = []string{"example.com/hold"}
	if err := f.Env.Client.Patch(t.Context(), svc, patch); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		f.WaitCached(t, uncached(t, f, o))
	}

	var history []string
	observe := func() map[string]string {
		states := map[string]string{}
		var line []string
		for _, n := range names {
			states[n] = childState(t, f.Env.Client, f.Owner, objs[n])
			line = append(line, n+"="+states[n])
		}
		history = append(history, strings.Join(line, " "))
		// Invariant: a child is touched only once every child of a later layer is gone (or foreign).
		for _, n := range names {
			if states[n] == "present" {
				continue
			}
			for _, m := range names {
				if layerOf[m] > layerOf[n] && (states[m] == "present" || states[m] == "terminating") {
					t.Fatalf("%s is %s while %s (a later layer) is %s; history:\n%s", n, states[n], m, states[m], strings.Join(history, "\n"))
				}
			}
		}
		return states
	}

	deleteOnce := func(mgr manager.Manager) bool {
		t.Helper()
		res, err := build().Delete(t.Context(), apply.NewApplier(mgr.GetClient(), mgr.GetAPIReader()), f.Owner)
		if err != nil {
			t.Fatal(err)
		}
		return res.Done
	}

	// Phase 1: the Service is terminating, held by its finalizer; nothing else is touched.
	harness.Eventually(t, waitTimeout, func() (bool, string) {
		if deleteOnce(f.Mgr) {
			t.Fatal("Delete reported done while the Service is held")
		}
		cached := &corev1.Service{}
		err := f.Mgr.GetClient().Get(t.Context(), client.ObjectKeyFromObject(objs["svc"]), cached)
		return observe()["svc"] == "terminating" && err == nil && cached.DeletionTimestamp != nil, strings.Join(history, "\n")
	})
	for range 3 {
		if deleteOnce(f.Mgr) {
			t.Fatal("Delete reported done while the Service is held")
		}
		if s := observe(); s["web"] != "present" || s["config"] != "present" || s["role"] != "present" {
			t.Fatalf("earlier layers touched while the Service is held: %v", s)
		}
	}

	// Restart: a new manager (new cache), new Applier and Graph. Release the Service and put a
	// foreign Service under its name at once: it is not ours, so it does not hold the deletion.
	mgr2 := f.Env.StartManager(t, nil)
	if err := f.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(objs["svc"]), svc); err != nil {
		t.Fatal(err)
	}
	oldUID := svc.UID
	patch = client.MergeFrom(svc.DeepCopy())
	svc.Finalizers = nil
	if err := f.Env.Client.Patch(t.Context(), svc, patch); err != nil {
		t.Fatal(err)
	}
	harness.WaitForDeletion(t, f.Env.Client, svc, waitTimeout)
	foreign := service("svc")
	foreign.Namespace = f.NS
	if err := f.Env.Client.Create(t.Context(), foreign); err != nil {
		t.Fatal(err)
	}
	if foreign.UID == oldUID {
		t.Fatal("recreated Service has the old UID")
	}

	harness.Eventually(t, waitTimeout, func() (bool, string) {
		done := deleteOnce(mgr2)
		observe()
		return done, strings.Join(history, "\n")
	})
	final := observe()
	want := map[string]string{"svc": "foreign", "web": "gone", "config": "gone", "role": "gone"}
	if diff := cmp.Diff(want, final); diff != "" {
		t.Errorf("final state (-want +got):\n%s\nhistory:\n%s", diff, strings.Join(history, "\n"))
	}
	t.Logf("observed states, call by call:\n%s", strings.Join(history, "\n"))
	// The walk went through the layers in order.
	var order []string
	for _, line := range history {
		for _, n := range names {
			if (strings.Contains(line, n+"=gone") || strings.Contains(line, n+"=terminating")) && !slices.Contains(order, n) {
				order = append(order, n)
			}
		}
	}
	if len(order) < 3 || order[0] != "svc" || order[1] != "web" {
		t.Errorf("deletion order %v, want svc, web, then config and role; history:\n%s", order, strings.Join(history, "\n"))
	}
}

// uncached reads obj's current version from the API server.
func uncached(t *testing.T, f *fixture.Fixture, obj client.Object) client.Object {
	t.Helper()
	live := obj.DeepCopyObject().(client.Object)
	if err := f.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), live); err != nil {
		t.Fatal(err)
	}
	return live
}

func TestIntegrationPrune(t *testing.T) {
	f := fixture.New(t)
	a := f.Applier()
	other := f.NewOwner(t, "other")

	full := graph.New()
	full.Add("config", fixture.ConfigMap("config", nil))
	full.Add("svc", service("svc")).DependsOn("config")
	if _, err := full.Apply(t.Context(), a, f.Owner); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Apply(t.Context(), other, service("other-svc")); err != nil {
		t.Fatal(err)
	}
	unlabelled := service("unlabelled")
	unlabelled.Namespace = f.NS
	if err := f.Env.Client.Create(t.Context(), unlabelled); err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: "svc"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: "other-svc"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: "config"}},
	} {
		f.WaitCached(t, uncached(t, f, o))
	}

	// The optional Service is switched off.
	reduced := graph.New()
	reduced.Add("config", fixture.ConfigMap("config", nil))
	f.Counter.Reset()
	pruned, err := reduced.Prune(t.Context(), a, f.Owner, &corev1.Service{}, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pruned {
		got = append(got, p.GetName())
	}
	if diff := cmp.Diff([]string{"svc"}, got); diff != "" {
		t.Errorf("pruned (-want +got):\n%s", diff)
	}
	if n := f.Counter.Snapshot().Count("delete", "services"); n != 1 {
		t.Errorf("%d Service deletes, want 1:\n%s", n, f.Counter.Snapshot())
	}
	harness.WaitForDeletion(t, f.Env.Client, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: "svc"}}, waitTimeout)
	for _, name := range []string{"other-svc", "unlabelled"} {
		if err := f.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: f.NS, Name: name}, &corev1.Service{}); err != nil {
			t.Errorf("Service %s (not ours) was affected: %v", name, err)
		}
	}
	if err := f.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: f.NS, Name: "config"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("declared ConfigMap was affected: %v", err)
	}

	// Nothing left to prune: no further deletes.
	harness.Eventually(t, waitTimeout, func() (bool, string) {
		err := f.Mgr.GetClient().Get(t.Context(), client.ObjectKey{Namespace: f.NS, Name: "svc"}, &corev1.Service{})
		return apierrors.IsNotFound(err), fmt.Sprintf("cache still has svc: %v", err)
	})
	f.Counter.Reset()
	if pruned, err := reduced.Prune(t.Context(), a, f.Owner, &corev1.Service{}, &corev1.ConfigMap{}); err != nil || len(pruned) != 0 {
		t.Errorf("second prune: %v, %v; want nothing", pruned, err)
	}
	if n := f.Counter.Snapshot().Writes(); n != 0 {
		t.Errorf("second prune made %d writes", n)
	}
}

// TestIntegrationTrackedChildMapsToOwner: a cluster-scoped child of a namespaced owner carries
// tracking labels only, and EnqueueTrackedOwner maps its events to the owner.
func TestIntegrationTrackedChildMapsToOwner(t *testing.T) {
	f := fixture.New(t)
	roleName := f.NS + "-tracked"
	live, op, err := f.Applier().Apply(t.Context(), f.Owner, clusterRole(roleName))
	if err != nil || op != apply.OperationCreated {
		t.Fatalf("apply ClusterRole: %s, %v", op, err)
	}
	if len(live.GetOwnerReferences()) != 0 {
		t.Errorf("cluster-scoped child has owner references: %v", live.GetOwnerReferences())
	}
	ref, ok := ownership.TrackedOwner(live)
	want := ownership.Reference{Kind: "ConfigMap", Namespace: f.NS, Name: "owner", UID: f.Owner.UID}
	if !ok || ref != want {
		t.Errorf("TrackedOwner = %+v, %v; want %+v", ref, ok, want)
	}

	requests := make(chan types.NamespacedName, 100)
	f.Env.StartManager(t, func(mgr manager.Manager) error {
		return ctrl.NewControllerManagedBy(mgr).
			Named("tracked-"+f.NS).
			Watches(&rbacv1.ClusterRole{}, ownership.EnqueueTrackedOwner(&corev1.ConfigMap{}, mgr.GetScheme())).
			Complete(ctrlreconcile.Func(func(_ context.Context, req ctrlreconcile.Request) (ctrlreconcile.Result, error) {
				requests <- req.NamespacedName
				return ctrlreconcile.Result{}, nil
			}))
	})
	ownerKey := client.ObjectKeyFromObject(f.Owner)
	waitFor := func(what string) {
		t.Helper()
		var seen []types.NamespacedName
		harness.Eventually(t, waitTimeout, func() (bool, string) {
			for {
				select {
				case r := <-requests:
					seen = append(seen, r)
					if r == ownerKey {
						return true, ""
					}
				default:
					return false, fmt.Sprintf("%s: requests so far %v, want %v", what, seen, ownerKey)
				}
			}
		})
	}
	waitFor("initial list")
	// A change of the child maps to the owner again.
	changed := clusterRole(roleName)
	changed.Rules[0].Verbs = []string{"get", "list"}
	if _, op, err := f.Applier().Apply(t.Context(), f.Owner, changed); err != nil || op != apply.OperationUpdated {
		t.Fatalf("update ClusterRole: %s, %v", op, err)
	}
	waitFor("update")
}
