//go:build integration

package reconcile_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/reconcile/internal/fixture"
	"github.com/convergo-dev/convergo/testing/harness"
)

// Deletion choices per child on the plain API server: kept children are released (once) whatever
// the cache shows. Foreground propagation needs the garbage collector: see
// reconcile/internal/deletiontest, which runs on the full local cluster.

// ownedBy describes what of owner a child carries: its owner reference and its tracking.
func ownedBy(obj, owner client.Object) string {
	var refs []string
	for _, r := range obj.GetOwnerReferences() {
		if r.UID == owner.GetUID() {
			refs = append(refs, "ownerRef")
		}
	}
	// Every mark of Convergo's: the tracking labels and annotations, the intent hash, the node
	// annotations, the deletion policy.
	for _, m := range []map[string]string{obj.GetLabels(), obj.GetAnnotations()} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if strings.HasPrefix(k, "convergo.dev/") {
				refs = append(refs, k)
			}
		}
	}
	return fmt.Sprint(refs)
}

// TestIntegrationKeepOnDeleteWhateverTheCache: a Widget's "data" ConfigMap is kept, its "app" ConfigMap
// (which depends on it) is not. Deleted right after the reconciles that created them, with the
// children's cache current, lagging or filtered, and reconciles continuing while the Widget's cache
// still shows it: "app" is deleted, "data" released, both once, in the one reconcile that also removes
// the finalizer; afterwards "data" exists with nothing of the Widget left on it, none of Convergo's
// marks either. Kept, "data" never had a controller reference.
func TestIntegrationKeepOnDeleteWhateverTheCache(t *testing.T) {
	const rounds = 3
	for _, v := range cacheVariants {
		t.Run(v.name, func(t *testing.T) {
			env := harness.Default()
			wc := setupWidgets(t, env)
			ns := env.Namespace(t)
			counter := harness.NewRequestCounter()
			childGate := harness.NewWatchGate("configmaps")
			widgetGate := harness.NewWatchGate("widgets")
			cfg := widgetGate.Wrap(childGate.Wrap(counter.Wrap(env.Config)))
			mgr := env.StartManager(t, nil, harness.WithManagerConfig(cfg), harness.WithManagerOptions(func(o *manager.Options) {
				o.Scheme = widgetScheme
				v.configure(o, ns, &corev1.ConfigMap{})
			}))
			t.Cleanup(childGate.Resume)
			t.Cleanup(widgetGate.Resume)
			for _, l := range []client.ObjectList{&corev1.ConfigMapList{}, &testapi.WidgetList{}} {
				if err := mgr.GetClient().List(t.Context(), l); err != nil {
					t.Fatal(err)
				}
			}
			if v.lag {
				childGate.Pause()
			}
			rec := reconcile.NewReconciler(mgr, reconcile.Hooks[*testapi.Widget]{Children: func(_ context.Context, w *testapi.Widget) (*graph.Graph, error) {
				g := graph.New()
				g.Add("data", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.Name + "-data"}, Data: w.Spec.Data}).KeepOnDelete()
				g.Add("app", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.Name + "-app"}, Data: w.Spec.Data}).DependsOn("data")
				return g, nil
			}}, reconcile.WithName("keep-"+v.name), reconcile.WithOwns(&corev1.ConfigMap{}))
			for round := range rounds {
				w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%d", round), Namespace: ns}, Spec: testapi.WidgetSpec{Data: map[string]string{"k": "v"}}}
				if err := wc.Create(t.Context(), w); err != nil {
					t.Fatal(err)
				}
				req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}
				waitWidgetCached(t, mgr, req.NamespacedName, func(*testapi.Widget) bool { return true })
				for range 2 { // data, then app
					if _, err := rec.Reconcile(t.Context(), req); err != nil {
						t.Fatalf("round %d: %v", round, err)
					}
				}
				data := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.Name + "-data", Namespace: ns}}
				app := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.Name + "-app", Namespace: ns}}
				for _, o := range []client.Object{data, app} {
					if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(o), o); err != nil {
						t.Fatalf("round %d: %v", round, err)
					}
				}
				if err := wc.Get(t.Context(), req.NamespacedName, w); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff([]string{
					"[convergo.dev/owner-group convergo.dev/owner-kind convergo.dev/owner-uid convergo.dev/deletion-policy convergo.dev/intent-hash convergo.dev/node convergo.dev/owner-name convergo.dev/owner-namespace convergo.dev/written-for]",
					"[ownerRef convergo.dev/owner-uid convergo.dev/depends-on convergo.dev/intent-hash convergo.dev/node convergo.dev/written-for]"},
					[]string{ownedBy(data, w), ownedBy(app, w)}); diff != "" {
					t.Errorf("round %d: before deletion, what data and app carry of the Widget (-want +got):\n%s", round, diff)
				}

				if !v.lag && !v.filter {
					// Converged, with the choice on the intent: a reconcile once the cache shows it all
					// sends nothing.
					for _, o := range []client.Object{data, app} {
						harness.Eventually(t, waitTimeout, func() (bool, string) {
							cached := &corev1.ConfigMap{}
							err := mgr.GetClient().Get(t.Context(), client.ObjectKeyFromObject(o), cached)
							return err == nil && cached.ResourceVersion == o.GetResourceVersion(), fmt.Sprintf("%s not cached as written: %v", o.GetName(), err)
						})
					}
					waitWidgetCached(t, mgr, req.NamespacedName, func(c *testapi.Widget) bool { return c.ResourceVersion == w.ResourceVersion })
					counter.Reset()
					if _, err := rec.Reconcile(t.Context(), req); err != nil {
						t.Fatal(err)
					}
					if reqs := counter.Snapshot(); len(reqs) != 0 {
						t.Fatalf("round %d: a converged reconcile sent %d requests:\n%s", round, len(reqs), reqs)
					}
				}
				if err := wc.Delete(t.Context(), w); err != nil {
					t.Fatal(err)
				}
				waitWidgetCached(t, mgr, req.NamespacedName, func(w *testapi.Widget) bool { return w.DeletionTimestamp != nil })
				widgetGate.Pause() // the Widget's cache keeps showing it, finalizer and all
				counter.Reset()
				if _, err := rec.Reconcile(t.Context(), req); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if err := wc.Get(t.Context(), req.NamespacedName, &testapi.Widget{}); !apierrors.IsNotFound(err) {
					t.Fatalf("round %d: the Widget was not finalized in one reconcile: %v", round, err)
				}
				for range 3 { // reconciles of the stale copy change nothing
					if _, err := rec.Reconcile(t.Context(), req); err != nil {
						t.Fatalf("round %d: reconcile after finalization: %v", round, err)
					}
				}
				type figures struct {
					AppDeletes, DataDeletes, Releases, FinalizerRemovals, NotFound int
					Data                                                           string
				}
				got := figures{}
				for _, r := range counter.Snapshot() {
					switch {
					case r.Verb == "delete" && r.Resource == "configmaps" && r.Name == app.Name:
						got.AppDeletes++
					case r.Verb == "delete" && r.Resource == "configmaps":
						got.DataDeletes++
					case r.Verb == "patch" && r.Resource == "configmaps" && r.Name == data.Name:
						got.Releases++
					case r.Verb == "patch" && r.Resource == "widgets" && r.Subresource == "":
						got.FinalizerRemovals++
					}
					if r.StatusCode == 404 && r.Verb != "get" {
						got.NotFound++
					}
				}
				if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(data), data); err != nil {
					got.Data = err.Error()
				} else {
					got.Data = ownedBy(data, w)
				}
				want := figures{AppDeletes: 1, Releases: 1, FinalizerRemovals: 1, Data: "[]"}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("round %d: deletion (-want +got):\n%s\n%s", round, diff, counter.Snapshot())
				}
				harness.WaitForDeletion(t, env.Client, app, waitTimeout)
				widgetGate.Resume()
			}
		})
	}
}

// TestIntegrationPruneReleasesKeptChild: a kept child the graph no longer declares is released, not
// deleted, and only once while the cache keeps showing it tracked; also when the cache has not seen
// the apply that marked it kept (it is then read from the API server before anything is decided).
func TestIntegrationPruneReleasesKeptChild(t *testing.T) {
	cases := map[string]struct {
		// markedUnseen: the child is first applied unmarked, the cache catches up and is held, then the
		// child is marked kept (a write the cache does not show).
		markedUnseen bool
	}{
		"the cache shows the kept child, then lags":       {},
		"the cache has not seen the write that marked it": {markedUnseen: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			env := harness.Default()
			ns := env.Namespace(t)
			counter := harness.NewRequestCounter()
			mgr, gate := variantManager(t, env, cacheVariant{name: "lagging", lag: true}, counter, ns)
			owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}}
			if err := env.Client.Create(t.Context(), owner); err != nil {
				t.Fatal(err)
			}
			a := apply.NewApplier(mgr.GetClient(), mgr.GetAPIReader())
			full := func(keep bool) *graph.Graph {
				g := graph.New()
				g.Add("config", fixture.ConfigMap("config", nil))
				data := g.Add("data", fixture.ConfigMap("data", map[string]string{"k": "v"}))
				if keep {
					data.KeepOnDelete()
				}
				return g
			}
			if _, err := full(!tc.markedUnseen).Apply(t.Context(), a, owner); err != nil {
				t.Fatal(err)
			}
			data := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns}}
			harness.Eventually(t, waitTimeout, func() (bool, string) {
				err := mgr.GetClient().Get(t.Context(), client.ObjectKeyFromObject(data), &corev1.ConfigMap{})
				return err == nil, fmt.Sprintf("data not in the cache: %v", err)
			})
			gate.Pause()
			if tc.markedUnseen {
				if _, err := full(true).Apply(t.Context(), a, owner); err != nil {
					t.Fatal(err)
				}
			}
			reduced := graph.New()
			reduced.Add("config", fixture.ConfigMap("config", nil))
			counter.Reset()
			var pruned []client.Object
			for range 3 {
				p, err := reduced.Prune(t.Context(), a, owner, &corev1.ConfigMap{})
				if err != nil {
					t.Fatal(err)
				}
				pruned = append(pruned, p...)
			}
			type figures struct {
				Pruned, Deletes, Releases int
				Data                      string
			}
			reqs := counter.Snapshot().InNamespace(ns)
			got := figures{Pruned: len(pruned), Deletes: reqs.Count("delete", "configmaps"), Releases: reqs.Count("patch", "configmaps")}
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(data), data); err != nil {
				got.Data = err.Error()
			} else {
				got.Data = ownedBy(data, owner)
			}
			if diff := cmp.Diff(figures{Releases: 1, Data: "[]"}, got); diff != "" {
				t.Errorf("prune (-want +got):\n%s\n%s", diff, reqs)
			}
			// The lag is real: the cache still shows the child tracked.
			cached := &corev1.ConfigMap{}
			if err := mgr.GetClient().Get(t.Context(), client.ObjectKeyFromObject(data), cached); err != nil || !ownership.IsTrackedBy(cached, owner) {
				t.Errorf("the cache does not show data tracked (%v): the test lost its lag", err)
			}
		})
	}
}
