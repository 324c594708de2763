//go:build integration

package reconcile_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/internal/kobj"
	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestIntegrationAppliedIntent: the fields the Applier expects the API server to record for each of
// its applies are the fields the real API server records, so the label it writes vouches for the
// intent's digest, which is the digest of the values the child holds; a field someone else changes
// or removes, or that the API server records otherwise, voids it, and another field manager's
// addition does not.
func TestIntegrationAppliedIntent(t *testing.T) {
	direct := setupWidgets(t, harness.Default()) // the Widget CRD, for a custom resource child
	f := newFixture(t, harness.WithManagerOptions(func(o *manager.Options) { o.Scheme = widgetScheme }))
	a := f.applier(reconcile.WithAPIReader(f.mgr.GetAPIReader()))
	cases := map[string]struct {
		desired func() client.Object
		// theirs changes the live child as another field manager would; it reports whether the change
		// takes a field the Applier applied.
		theirs func(client.Object) bool
	}{
		"ConfigMap, a value of ours changed": {
			desired: func() client.Object {
				return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "page"}, Data: map[string]string{"index.html": "<p>hi</p>"}}
			},
			theirs: func(o client.Object) bool { o.(*corev1.ConfigMap).Data["index.html"] = "<p>theirs</p>"; return true },
		},
		"ConfigMap, a key of theirs added": {
			desired: func() client.Object {
				return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "page2"}, Data: map[string]string{"index.html": "<p>hi</p>"}}
			},
			theirs: func(o client.Object) bool { o.(*corev1.ConfigMap).Data["extra"] = "theirs"; return false },
		},
		"Deployment, an argument of ours removed": {
			desired: func() client.Object { return webDeployment("web", "ours:1") },
			theirs: func(o client.Object) bool {
				o.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Args = nil
				return true
			},
		},
		"Deployment, a label of theirs added": {
			desired: func() client.Object { return webDeployment("web2", "ours:1") },
			theirs: func(o client.Object) bool {
				ls := o.GetLabels()
				ls["theirs"] = "1"
				o.SetLabels(ls)
				return false
			},
		},
		"Service, a port of ours changed": {
			desired: func() client.Object {
				return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{
					Selector: map[string]string{"app": "web"},
					Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
				}}
			},
			theirs: func(o client.Object) bool { o.(*corev1.Service).Spec.Ports[0].Port = 81; return true },
		},
		"ClusterRole, a verb added to an atomic list of ours": {
			desired: func() client.Object {
				return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: f.ns + "-sealed"},
					Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}}
			},
			theirs: func(o client.Object) bool {
				r := &o.(*rbacv1.ClusterRole).Rules[0]
				r.Verbs = append(r.Verbs, "delete")
				return true
			},
		},
		"custom resource, a value of ours changed": {
			desired: func() client.Object {
				return &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "child"}, Spec: testapi.WidgetSpec{Data: map[string]string{"k": "v"}}}
			},
			theirs: func(o client.Object) bool { o.(*testapi.Widget).Spec.Data["k"] = "theirs"; return true },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			desired := tc.desired()
			gvk, err := apiutil.GVKForObject(desired, f.mgr.GetScheme())
			if err != nil {
				t.Fatal(err)
			}
			created := f.mustApply(t, a, desired, reconcile.OperationCreated)
			// Gone before the next test: the controllers of other tests watch Widgets everywhere.
			t.Cleanup(func() {
				if err := direct.Delete(context.WithoutCancel(t.Context()), created); err != nil && !apierrors.IsNotFound(err) {
					t.Fatal(err)
				}
				harness.WaitForDeletion(t, direct, created, waitTimeout)
			})
			live := kobj.New(desired)
			if err := direct.Get(t.Context(), client.ObjectKeyFromObject(created), live); err != nil {
				t.Fatal(err)
			}
			sealed, ok := reconcile.SealedDigest(live, a.FieldManager())
			if !ok {
				t.Fatalf("the fields the API server recorded are not the ones the Applier expected:\nlabels %v\nannotations %v\n%v",
					live.GetLabels(), live.GetAnnotations(), live.GetManagedFields())
			}
			values := reconcile.ValuesDigest(live, gvk, a.FieldManager())
			if diff := cmp.Diff(values[:min(len(values), len(sealed))], sealed); diff != "" {
				t.Errorf("the recorded intent is not what the child's values say (-values +recorded):\n%s", diff)
			}

			takes := tc.theirs(live)
			if err := direct.Update(t.Context(), live, client.FieldOwner("theirs")); err != nil {
				t.Fatal(err)
			}
			_, stillSealed := reconcile.SealedDigest(live, a.FieldManager())
			if diff := cmp.Diff(!takes, stillSealed); diff != "" {
				t.Errorf("still vouched for after their change (-want +got):\n%s", diff)
			}
			if values := reconcile.ValuesDigest(live, gvk, a.FieldManager()); takes && strings.HasPrefix(values, sealed) {
				t.Error("the values still give the intent's digest after their change of a field of ours")
			}
		})
	}
}
