//go:build integration

package reconcile_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/testing/harness"
)

// withSlimCache gives a test's manager a SlimCache for the children these tests apply.
func withSlimCache() harness.ManagerOption {
	return harness.WithManagerOptions(func(o *manager.Options) { reconcile.SlimCache(&o.Cache, cachedKinds()...) })
}

// TestIntegrationSlimCache: children applied on the real API server and cached slim are judged from
// their digests: converged ones cost no request, also for a controller that starts again; one whose
// field someone changed and changed back (so that the API server no longer records it as ours) costs
// one write, once.
func TestIntegrationSlimCache(t *testing.T) {
	f := newFixture(t, withSlimCache())
	a := f.applier(reconcile.WithAPIReader(f.mgr.GetAPIReader()))
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: f.ns + "-slim"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}}
	page := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "page"}, Data: map[string]string{"index.html": "<p>hi</p>"}}
	deploy := webDeployment("web", "ours:1")
	children := []client.Object{role, page, deploy}
	for _, obj := range children {
		f.mustApply(t, a, obj, reconcile.OperationCreated)
	}

	cached := &appsv1.Deployment{}
	if err := f.mgr.GetClient().Get(t.Context(), client.ObjectKey{Namespace: f.ns, Name: "web"}, cached); err != nil {
		t.Fatal(err)
	}
	if _, ok := cached.Annotations[reconcile.AnnotationApplied]; !ok || len(cached.Spec.Template.Spec.Containers) != 0 || cached.ManagedFields != nil {
		t.Errorf("the cached Deployment is not slim: annotations %v, %d containers, %d managedFields entries",
			cached.Annotations, len(cached.Spec.Template.Spec.Containers), len(cached.ManagedFields))
	}

	// applyAll applies every child again and returns the operations and the requests it cost.
	applyAll := func(t *testing.T, a *reconcile.Applier) ([]reconcile.Operation, harness.Requests) {
		t.Helper()
		f.counter.Reset()
		var ops []reconcile.Operation
		for _, obj := range children {
			_, op, err := a.Apply(t.Context(), f.owner, obj)
			if err != nil {
				t.Fatal(err)
			}
			ops = append(ops, op)
		}
		return ops, f.counter.Snapshot().Filter(func(r harness.Request) bool { return r.Verb != "watch" && r.Verb != "list" })
	}
	unchanged := []reconcile.Operation{reconcile.OperationUnchanged, reconcile.OperationUnchanged, reconcile.OperationUnchanged}

	t.Run("converged", func(t *testing.T) {
		ops, reqs := applyAll(t, a)
		if diff := cmp.Diff(unchanged, ops); diff != "" || len(reqs) != 0 {
			t.Errorf("operations (-want +got):\n%s\nrequests, want none:\n%s", diff, reqs)
		}
	})

	t.Run("restarted", func(t *testing.T) {
		mgr := f.env.StartManager(t, nil, harness.WithManagerConfig(f.counter.Wrap(f.env.Config)), withSlimCache())
		for _, l := range []client.ObjectList{&corev1.ConfigMapList{}, &appsv1.DeploymentList{}, &rbacv1.ClusterRoleList{}} {
			if err := mgr.GetClient().List(t.Context(), l, client.InNamespace(f.ns)); err != nil {
				t.Fatal(err)
			}
		}
		fresh := reconcile.NewApplier(mgr.GetClient(), mgr.GetScheme(), reconcile.WithAPIReader(mgr.GetAPIReader()))
		ops, reqs := applyAll(t, fresh)
		if diff := cmp.Diff(unchanged, ops); diff != "" || len(reqs) != 0 {
			t.Errorf("operations (-want +got):\n%s\nrequests, want none:\n%s", diff, reqs)
		}
	})

	t.Run("changed and changed back", func(t *testing.T) {
		live := &appsv1.Deployment{}
		for _, image := range []string{"theirs:1", "ours:1"} {
			if err := f.env.Client.Get(t.Context(), client.ObjectKeyFromObject(cached), live); err != nil {
				t.Fatal(err)
			}
			live.Spec.Template.Spec.Containers[0].Image = image
			if err := f.env.Client.Update(t.Context(), live); err != nil {
				t.Fatal(err)
			}
		}
		f.waitCached(t, live)
		// The digest no longer covers the image: one write makes it ours again, then nothing.
		f.counter.Reset()
		got, op, err := a.Apply(t.Context(), f.owner, deploy)
		if err != nil {
			t.Fatal(err)
		}
		if reqs := f.counter.Snapshot(); op != reconcile.OperationUpdated || reqs.Count("patch", "deployments") != 1 || reqs.Count("get", "") != 0 {
			t.Errorf("Apply = %s, want %s with one patch and no read:\n%s", op, reconcile.OperationUpdated, reqs)
		}
		f.waitCached(t, got)
		ops, reqs := applyAll(t, a)
		if diff := cmp.Diff(unchanged, ops); diff != "" || len(reqs) != 0 {
			t.Errorf("operations (-want +got):\n%s\nrequests, want none:\n%s", diff, reqs)
		}
	})
}
