//go:build integration

package reconcile_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestIntegrationReconcilerReadsItsOwnWrites: the manager's cache is held behind the API server, so
// after a reconcile has added the finalizer and written the status it still shows the Widget as it
// was before. A second reconcile started now (as a child's event would start it, with several workers)
// must work on what the first one wrote: no second finalizer patch, no status patch with a stale
// resourceVersion (a 409, a re-read and a retry), no write at all. The Reconciler is not registered
// with the manager, so only the test's own calls reconcile.
func TestIntegrationReconcilerReadsItsOwnWrites(t *testing.T) {
	env := harness.Default()
	wc := setupWidgets(t, env)
	ns := env.Namespace(t)
	counter := harness.NewRequestCounter()
	gate := harness.NewWatchGate()
	mgr := env.StartManager(t, nil, harness.WithManagerConfig(gate.Wrap(counter.Wrap(env.Config))),
		harness.WithManagerOptions(func(o *manager.Options) { o.Scheme = widgetScheme }))
	t.Cleanup(gate.Resume) // before the manager stops (cleanups run last-registered first)

	cases := map[string]struct {
		// ready: the config child is ready, so the first reconcile ends Ready, else Reconciling.
		ready bool
		want  string
	}{
		"waiting for a child": {want: "Reconciling/WaitingForDependencies"},
		"ready":               {ready: true, want: "Ready/Reconciled"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w-%d", widgetRuns.Add(1)), Namespace: ns},
				Spec: testapi.WidgetSpec{Data: map[string]string{"k": "v"}}}
			if tc.ready {
				// An orphan the first apply adopts, already annotated ready=true.
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.Name + "-config", Namespace: ns,
					Annotations: map[string]string{"ready": "true"}}}
				if err := env.Client.Create(t.Context(), cm); err != nil {
					t.Fatal(err)
				}
			}
			rec := reconcile.NewReconciler(mgr, reconcile.Hooks[*testapi.Widget]{Children: widgetChildren(new(atomic.Int64))},
				reconcile.WithName(w.Name), reconcile.WithOwns(&corev1.ConfigMap{}),
				reconcile.WithApplierOptions(apply.WithAdoptOrphans()))
			if err := wc.Create(t.Context(), w); err != nil {
				t.Fatal(err)
			}
			// Let the cache see the new Widget (and ConfigMaps), then hold it there.
			gate.Resume()
			harness.Eventually(t, waitTimeout, func() (bool, string) {
				err := mgr.GetClient().Get(t.Context(), client.ObjectKeyFromObject(w), &testapi.Widget{})
				return err == nil, fmt.Sprintf("widget not in the cache: %v", err)
			})
			// Informers start with a watch (a streaming list), so the ConfigMap one must start before the gate closes.
			if err := mgr.GetClient().List(t.Context(), &corev1.ConfigMapList{}, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			if tc.ready {
				harness.Eventually(t, waitTimeout, func() (bool, string) {
					err := mgr.GetClient().Get(t.Context(), client.ObjectKey{Namespace: ns, Name: w.Name + "-config"}, &corev1.ConfigMap{})
					return err == nil, fmt.Sprintf("config not in the cache: %v", err)
				})
			}
			gate.Pause()
			req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}

			counter.Reset()
			if _, err := rec.Reconcile(t.Context(), req); err != nil {
				t.Fatalf("first reconcile: %v", err)
			}
			first := counter.Snapshot().InNamespace(ns)
			if got := first.Count("patch", "widgets") + first.Count("patch", "widgets/status"); got != 2 {
				t.Fatalf("first reconcile: %d Widget writes, want 2 (finalizer, status):\n%s", got, first)
			}

			counter.Reset()
			if _, err := rec.Reconcile(t.Context(), req); err != nil {
				t.Fatalf("second reconcile: %v", err)
			}
			second := counter.Snapshot().InNamespace(ns)
			type widgetRequests struct{ Patches, StatusPatches, Gets int }
			got := widgetRequests{second.Count("patch", "widgets"), second.Count("patch", "widgets/status"), second.Count("get", "widgets")}
			if diff := cmp.Diff(widgetRequests{}, got); diff != "" {
				t.Errorf("second reconcile while the cache lags: Widget requests (-want +got):\n%s\nall requests:\n%s", diff, second)
			}
			// The lag is real: the cache still shows the Widget without the finalizer.
			cached := &testapi.Widget{}
			if err := mgr.GetClient().Get(t.Context(), req.NamespacedName, cached); err != nil {
				t.Fatal(err)
			}
			if len(cached.Finalizers) != 0 {
				t.Errorf("cache shows finalizers %v while paused, want none", cached.Finalizers)
			}
			live := &testapi.Widget{}
			if err := wc.Get(t.Context(), req.NamespacedName, live); err != nil {
				t.Fatal(err)
			}
			if got := summary(live); got != tc.want {
				t.Errorf("live Widget = %s, want %s", got, tc.want)
			}
		})
	}
}

// summary names the Widget's true kstatus condition with its reason ("Ready/Reconciled").
func summary(w *testapi.Widget) string {
	for _, t := range []string{status.Stalled, status.Reconciling, status.Ready} {
		if c := meta.FindStatusCondition(w.GetConditions(), t); c != nil && c.Status == metav1.ConditionTrue {
			return t + "/" + c.Reason
		}
	}
	return "none"
}
