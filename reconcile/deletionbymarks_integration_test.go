//go:build integration

package reconcile_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/harness"
)

// guardedThings is memThings, safe for concurrent use, that runs onDelete before each Delete.
type guardedThings struct {
	mu       sync.Mutex
	m        memThings
	onDelete func(id string)
}

func (g *guardedThings) Kind() string { return g.m.Kind() }

func (g *guardedThings) Observe(ctx context.Context, id, want string) (graph.Observation, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m.Observe(ctx, id, want)
}

func (g *guardedThings) Apply(ctx context.Context, id, want string, found graph.Observation, owner string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m.Apply(ctx, id, want, found, owner)
}

func (g *guardedThings) Delete(ctx context.Context, id string) error {
	if g.onDelete != nil {
		g.onDelete(id)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m.Delete(ctx, id)
}

func (g *guardedThings) has(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.m.owner[id]
	return ok
}

// TestIntegrationDeletionWithoutGraph: a Widget whose graph is external db <- ConfigMap config <-
// ConfigMap derived is deleted once its graph can no longer be built (its spec made invalid, or the
// Secret its Children hook reads deleted), with derived held in Terminating by another finalizer.
// The deletion follows the marks Apply left: config is not deleted while derived exists, db not while
// config exists, and the finalizer goes last, with nothing left. Every cache variant: the children are
// listed from the API server on this path, so a cache that lags or never shows them changes nothing.
// Without reconcile.WithExternalKinds the cluster children still go in order, and the Widget reads
// Ready=False, DeletionFailed, with a message saying what to do, finalizer in place, until its spec is
// fixed.
func TestIntegrationDeletionWithoutGraph(t *testing.T) {
	type tc struct {
		variant cacheVariant
		cause   string // "invalid spec" or "Secret gone"
		noKinds bool
	}
	var cases []tc
	for _, v := range cacheVariants {
		cases = append(cases, tc{variant: v, cause: "invalid spec"})
	}
	cases = append(cases, tc{variant: cacheVariants[0], cause: "Secret gone"},
		tc{variant: cacheVariants[0], cause: "invalid spec", noKinds: true},
		tc{variant: cacheVariants[1], cause: "Secret gone", noKinds: true})
	for i, c := range cases {
		name := fmt.Sprintf("%s/%s", c.variant.name, c.cause)
		if c.noKinds {
			name += "/without external kinds"
		}
		t.Run(name, func(t *testing.T) {
			env := harness.Default()
			wc := setupWidgets(t, env)
			ns := env.Namespace(t)
			gate := harness.NewWatchGate("configmaps")
			mgr := env.StartManager(t, nil, harness.WithManagerConfig(gate.Wrap(env.Config)), harness.WithManagerOptions(func(o *manager.Options) {
				o.Scheme = widgetScheme
				c.variant.configure(o, ns, &corev1.ConfigMap{})
			}))
			t.Cleanup(gate.Resume)
			if err := mgr.GetClient().List(t.Context(), &corev1.ConfigMapList{}, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			if c.variant.lag {
				gate.Pause()
			}

			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: ns}, Spec: testapi.WidgetSpec{Data: map[string]string{"k": "v"}}}
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "w-password", Namespace: ns}, StringData: map[string]string{"password": "p"}}
			key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
			exists := func(name string) (bool, bool) { // exists, being deleted
				cm := &corev1.ConfigMap{}
				err := env.Client.Get(context.WithoutCancel(t.Context()), key(name), cm)
				if err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("get ConfigMap %s: %v", name, err)
				}
				return err == nil, err == nil && cm.DeletionTimestamp != nil
			}
			var (
				mu         sync.Mutex
				violations []string
			)
			things := &guardedThings{m: memThings{owner: map[string]string{}}}
			things.onDelete = func(id string) {
				if there, _ := exists("w-config"); there {
					mu.Lock()
					violations = append(violations, "external "+id+" deleted while ConfigMap w-config exists")
					mu.Unlock()
				}
			}
			opts := []reconcile.ReconcilerOption{reconcile.WithName(fmt.Sprintf("bymarks-%d", i)), reconcile.WithOwns(&corev1.ConfigMap{})}
			if !c.noKinds {
				opts = append(opts, reconcile.WithExternalKinds[string](things))
			}
			apiReader := mgr.GetAPIReader()
			rec := reconcile.NewReconciler(mgr, reconcile.Hooks[*testapi.Widget]{Children: func(ctx context.Context, w *testapi.Widget) (*graph.Graph, error) {
				if w.Spec.Invalid != "" {
					return nil, reconcile.Invalid("spec.invalid is set: %s", w.Spec.Invalid)
				}
				if err := apiReader.Get(ctx, key(secret.Name), &corev1.Secret{}); err != nil {
					return nil, fmt.Errorf("read the password Secret: %w", err)
				}
				g := graph.New()
				graph.AddExternal(g, "db", things, "w-db", "v1")
				g.Add("config", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "w-config"}}).DependsOn("db")
				g.Add("derived", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "w-derived"}}).DependsOn("config")
				return g, nil
			}}, opts...)
			for _, o := range []client.Object{secret, w} {
				if err := wc.Create(t.Context(), o); err != nil {
					t.Fatal(err)
				}
			}
			req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}
			reconcileOnce := func() error {
				_, err := rec.Reconcile(t.Context(), req)
				return err
			}
			waitWidgetCached(t, mgr, req.NamespacedName, func(*testapi.Widget) bool { return true })
			for pass := 0; ; pass++ {
				if err := reconcileOnce(); err != nil {
					t.Fatal(err)
				}
				if err := wc.Get(t.Context(), req.NamespacedName, w); err != nil {
					t.Fatal(err)
				}
				if status.IsReady(w) {
					break
				}
				if pass == 10 {
					t.Fatalf("not Ready after %d reconciles: %v", pass, w.Status.Conditions)
				}
				waitWidgetCached(t, mgr, req.NamespacedName, func(cw *testapi.Widget) bool { return cw.ResourceVersion == w.ResourceVersion })
			}

			// derived is held in Terminating; then the graph can no longer be built; then the deletion.
			derived := &corev1.ConfigMap{}
			if err := env.Client.Get(t.Context(), key("w-derived"), derived); err != nil {
				t.Fatal(err)
			}
			derived.Finalizers = append(derived.Finalizers, widgetHoldFinalizer)
			if err := env.Client.Update(t.Context(), derived); err != nil {
				t.Fatal(err)
			}
			switch c.cause {
			case "invalid spec":
				w.Spec.Invalid = "broken"
				if err := wc.Update(t.Context(), w); err != nil {
					t.Fatal(err)
				}
			case "Secret gone":
				if err := wc.Delete(t.Context(), secret); err != nil {
					t.Fatal(err)
				}
			}
			if err := wc.Delete(t.Context(), w); err != nil {
				t.Fatal(err)
			}
			waitWidgetCached(t, mgr, req.NamespacedName, func(cw *testapi.Widget) bool {
				return cw.DeletionTimestamp != nil && (c.cause != "invalid spec" || cw.Spec.Invalid != "")
			})

			state := func() string {
				_, derivedDeleting := exists("w-derived")
				configThere, configDeleting := exists("w-config")
				return fmt.Sprintf("derived deleting=%v, config there=%v deleting=%v, db there=%v",
					derivedDeleting, configThere, configDeleting, things.has("w-db"))
			}
			for range 3 {
				err := reconcileOnce()
				if c.noKinds != (err != nil) {
					t.Fatalf("reconcile while derived is held: %v", err)
				}
				if diff := cmp.Diff("derived deleting=true, config there=true deleting=false, db there=true", state()); diff != "" {
					t.Fatalf("while derived is held (-want +got):\n%s", diff)
				}
			}
			if c.noKinds {
				if err := wc.Get(t.Context(), req.NamespacedName, w); err != nil {
					t.Fatal(err)
				}
				ready := meta.FindStatusCondition(w.GetConditions(), status.Ready)
				if ready == nil || ready.Reason != "DeletionFailed" || !strings.Contains(ready.Message, `kind "mem.thing" is unknown`) ||
					!strings.Contains(ready.Message, "reconcile.WithExternalKinds") {
					t.Errorf("Ready while the external kind is unknown: %+v, want DeletionFailed naming the kind and the fix", ready)
				}
			}

			if err := env.Client.Get(t.Context(), key("w-derived"), derived); err != nil {
				t.Fatal(err)
			}
			derived.Finalizers = slices.DeleteFunc(derived.Finalizers, func(f string) bool { return f == widgetHoldFinalizer })
			if err := env.Client.Update(t.Context(), derived); err != nil {
				t.Fatal(err)
			}
			finalized := func() bool {
				err := wc.Get(t.Context(), req.NamespacedName, &testapi.Widget{})
				if err != nil && !apierrors.IsNotFound(err) {
					t.Fatal(err)
				}
				return apierrors.IsNotFound(err)
			}
			for range 5 {
				err := reconcileOnce()
				if !c.noKinds && err != nil {
					t.Fatal(err)
				}
				if finalized() {
					break
				}
			}
			if c.noKinds {
				if finalized() {
					t.Fatal("finalized with its external object left")
				}
				if diff := cmp.Diff("derived deleting=false, config there=false deleting=false, db there=true", state()); diff != "" {
					t.Fatalf("without the external kinds (-want +got):\n%s", diff)
				}
				// Fixed: the graph deletes the rest.
				switch c.cause {
				case "invalid spec":
					if err := wc.Get(t.Context(), req.NamespacedName, w); err != nil {
						t.Fatal(err)
					}
					w.Spec.Invalid = ""
					if err := wc.Update(t.Context(), w); err != nil {
						t.Fatal(err)
					}
					waitWidgetCached(t, mgr, req.NamespacedName, func(cw *testapi.Widget) bool { return cw.Spec.Invalid == "" })
				case "Secret gone":
					secret.ResourceVersion = ""
					if err := wc.Create(t.Context(), secret); err != nil {
						t.Fatal(err)
					}
				}
				for range 5 {
					if err := reconcileOnce(); err != nil {
						t.Fatal(err)
					}
					if finalized() {
						break
					}
				}
			}
			if !finalized() {
				t.Fatalf("not finalized: %s", state())
			}
			if diff := cmp.Diff("derived deleting=false, config there=false deleting=false, db there=false", state()); diff != "" {
				t.Errorf("left after the deletion (-want +got):\n%s", diff)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(violations) > 0 {
				t.Errorf("out of order: %v", violations)
			}
		})
	}
}
