//go:build integration

package reconcile_test

import (
	"context"
	"errors"
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
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/childcache"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/reconcile/internal/fixture"
	"github.com/convergo-dev/convergo/testing/harness"
)

// The invariants that rest on a child's absence or ownership hold whatever the cache shows. Each test
// here runs with these caches: the manager's cache as it is ("current"), one whose watch events are
// held back from the moment the test acts ("lagging": it shows the state of its first list and nothing
// after), one filtered by a label no object carries ("filtered": it never shows a child), the
// examples' cache (childcache.Configure: only our children, no managedFields), alone and lagging, and
// one restricted to the test's namespace ("namespaced": as an operator watching its own namespaces
// has it; cluster-scoped children are cached cluster-wide).

type cacheVariant struct {
	name   string
	lag    bool
	filter bool
	// lean: the children are cached as childcache.Configure keeps them (tracked children only).
	lean bool
	// namespaced: the cache holds the test's namespace only (see configure).
	namespaced bool
}

var cacheVariants = []cacheVariant{
	{name: "current"}, {name: "lagging", lag: true}, {name: "filtered", filter: true},
	{name: "lean", lean: true}, {name: "lean-lagging", lean: true, lag: true}, {name: "namespaced", namespaced: true},
	{name: "lean-filtered", lean: true, filter: true},
}

// configure sets o's cache for a test whose children are of the given kinds: built by
// limited to namespace ns for the namespaced one, the children filtered by a label none carries for
// the filtered variants, and cached as childcache.Configure keeps them for the lean ones.
func (v cacheVariant) configure(o *manager.Options, ns string, children ...client.Object) {
	if v.namespaced {
		o.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}}
	}
	if v.filter {
		never := labels.SelectorFromSet(labels.Set{"convergo.test/visible": "never"})
		o.Cache.ByObject = map[client.Object]cache.ByObject{}
		for _, c := range children {
			o.Cache.ByObject[c] = cache.ByObject{Label: never}
		}
	}
	if v.lean {
		childcache.Configure(&o.Cache, children...)
	}
}

// cachedKinds are the kinds of the children these tests apply.
func cachedKinds() []client.Object {
	return []client.Object{&corev1.ConfigMap{}, &appsv1.Deployment{}, &corev1.Service{}, &rbacv1.ClusterRole{}}
}

// startVariant gives the test a namespace and a manager with the variant's cache (lagging from now on
// for the lagging variant), whose requests counter counts.
func startVariant(t *testing.T, v cacheVariant) (*harness.Env, string, *harness.RequestCounter, manager.Manager) {
	t.Helper()
	env := harness.Default()
	ns := env.Namespace(t)
	counter := harness.NewRequestCounter()
	mgr, gate := variantManager(t, env, v, counter, ns)
	primeCache(t, mgr, gate, v, ns)
	return env, ns, counter, mgr
}

// variantManager starts a manager with the variant's cache, its requests counted; the returned gate is
// paused for the lagging variant (after the caller's first cache reads, see primeCache).
func variantManager(t *testing.T, env *harness.Env, v cacheVariant, counter *harness.RequestCounter, ns string) (manager.Manager, *harness.WatchGate) {
	t.Helper()
	gate := harness.NewWatchGate()
	mgr := env.StartManager(t, nil, harness.WithManagerConfig(gate.Wrap(counter.Wrap(env.Config))),
		harness.WithManagerOptions(func(o *manager.Options) { v.configure(o, ns, cachedKinds()...) }))
	t.Cleanup(gate.Resume) // before the manager stops
	return mgr, gate
}

// primeCache starts the informers of the children's kinds (a first read lists them) and, for the
// lagging variant, then holds every watch event back.
func primeCache(t *testing.T, mgr manager.Manager, gate *harness.WatchGate, v cacheVariant, ns string) {
	t.Helper()
	for _, l := range []client.ObjectList{&corev1.ConfigMapList{}, &appsv1.DeploymentList{}, &corev1.ServiceList{}, &rbacv1.ClusterRoleList{}} {
		if err := mgr.GetClient().List(t.Context(), l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	if v.lag {
		gate.Pause()
	}
}

func webDeployment(name, image string) *appsv1.Deployment {
	sel := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image, Args: []string{"--port=8080"}}}},
			},
		},
	}
}

// TestIntegrationNeverStealWhateverTheCache: an orphan and another owner's child exist under the names
// of our children, and the cache does not necessarily show them. Apply must refuse both with the typed
// errors and leave them exactly as they are; with WithAdoptOrphans the orphan is adopted.
func TestIntegrationNeverStealWhateverTheCache(t *testing.T) {
	for _, v := range cacheVariants {
		t.Run(v.name, func(t *testing.T) {
			env, ns, _, mgr := startVariant(t, v)

			owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}}
			other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other-owner", Namespace: ns}}
			for _, o := range []client.Object{owner, other} {
				if err := env.Client.Create(t.Context(), o); err != nil {
					t.Fatal(err)
				}
			}
			orphan := webDeployment("orphan", "theirs:1")
			orphan.Namespace = ns
			taken := webDeployment("taken", "theirs:1")
			taken.Namespace = ns
			if err := ownership.SetController(other, taken, env.Scheme); err != nil {
				t.Fatal(err)
			}
			for _, o := range []client.Object{orphan, taken} {
				if err := env.Client.Create(t.Context(), o); err != nil {
					t.Fatal(err)
				}
			}
			if !v.lag && !v.filter && !v.lean { // a lean cache holds only objects with our tracking label
				for _, o := range []client.Object{orphan, taken} {
					harness.Eventually(t, waitTimeout, func() (bool, string) {
						err := mgr.GetClient().Get(t.Context(), client.ObjectKeyFromObject(o), &appsv1.Deployment{})
						return err == nil, fmt.Sprintf("%s not in the cache: %v", o.GetName(), err)
					})
				}
			}
			a := apply.NewApplier(mgr.GetClient(), mgr.GetAPIReader())

			_, _, err := a.Apply(t.Context(), owner, webDeployment("orphan", "ours:1"))
			var orphanErr *apply.OrphanError
			if !errors.As(err, &orphanErr) {
				t.Errorf("apply over an orphan: %v, want *apply.OrphanError", err)
			}
			_, _, err = a.Apply(t.Context(), owner, webDeployment("taken", "ours:1"))
			var owned *ownership.AlreadyOwnedError
			if !errors.As(err, &owned) || owned.Current.Name != "other-owner" {
				t.Errorf("apply over another owner's child: %v, want *ownership.AlreadyOwnedError naming other-owner", err)
			}
			for _, name := range []string{"orphan", "taken"} {
				var live appsv1.Deployment
				if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &live); err != nil {
					t.Fatal(err)
				}
				got := []string{live.Spec.Template.Spec.Containers[0].Image, fmt.Sprint(ownership.IsTrackedBy(&live, owner))}
				if diff := cmp.Diff([]string{"theirs:1", "false"}, got); diff != "" {
					t.Errorf("%s was touched (-want +got: image, tracked by us):\n%s", name, diff)
				}
			}

			adopt := apply.NewApplier(mgr.GetClient(), mgr.GetAPIReader(), apply.WithAdoptOrphans())
			live, op, err := adopt.Apply(t.Context(), owner, webDeployment("orphan", "ours:1"))
			if err != nil || op != apply.OperationUpdated {
				t.Fatalf("adopting apply = %s, %v; want Updated", op, err)
			}
			if img := live.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Image; img != "ours:1" || !ownership.IsControlledBy(live, owner) {
				t.Errorf("adopted orphan: image %s, controlled by owner %v; want ours:1, true", img, ownership.IsControlledBy(live, owner))
			}
		})
	}
}

// TestIntegrationGraphDeleteWhateverTheCache: deletion starts right after the apply that created the
// children, 20 times in a row. A child is deleted only once every child depending on it is gone (by
// the API server's word), Delete reports done only when every child is gone (the cluster-scoped
// ClusterRole included), and each child gets exactly one DELETE.
func TestIntegrationGraphDeleteWhateverTheCache(t *testing.T) {
	const rounds = 20
	for _, v := range cacheVariants {
		t.Run(v.name, func(t *testing.T) {
			env, ns, counter, mgr := startVariant(t, v)
			owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}}
			if err := env.Client.Create(t.Context(), owner); err != nil {
				t.Fatal(err)
			}
			a := apply.NewApplier(mgr.GetClient(), mgr.GetAPIReader())
			for round := range rounds {
				// Short (label values), and unique across namespaces (the ClusterRole is cluster-scoped).
				name := fmt.Sprintf("del-%s-%s-r%d", v.name, ns[len(ns)-5:], round)
				g, children := deletionGraph(name, ns)
				res, err := g.Apply(t.Context(), a, owner)
				if err != nil || !res.Ready {
					t.Fatalf("round %d: apply: ready %v, %v", round, res != nil && res.Ready, err)
				}
				counter.Reset()
				done := false
				for pass := 0; !done; pass++ {
					if pass == 50 {
						t.Fatalf("round %d: not done after %d passes", round, pass)
					}
					res, err := g.Delete(t.Context(), a, owner)
					if err != nil {
						t.Fatalf("round %d pass %d: %v", round, pass, err)
					}
					done = res.Done
					exist := existing(t, env, children)
					if bad := outOfOrder(exist); bad != "" {
						t.Fatalf("round %d pass %d: %s (existing: %v)", round, pass, bad, exist)
					}
					if done && len(exist) > 0 {
						t.Fatalf("round %d pass %d: done, but %v still exist", round, pass, exist)
					}
				}
				deletes := map[string]int{}
				for _, r := range counter.Snapshot().Filter(func(r harness.Request) bool { return r.Verb == "delete" }) {
					deletes[r.Resource]++
				}
				want := map[string]int{"clusterroles": 1, "configmaps": 1, "deployments": 1, "services": 1}
				if diff := cmp.Diff(want, deletes); diff != "" {
					t.Fatalf("round %d: DELETE requests per resource (-want +got):\n%s\n%s", round, diff, counter.Snapshot())
				}
			}
		})
	}
}

// deletionGraph: a ClusterRole and a ConfigMap, a Deployment that depends on both, a Service that
// depends on the Deployment. children maps each child's graph name to its object (namespaced).
func deletionGraph(name, ns string) (*graph.Graph, map[string]client.Object) {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
	config := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"k": "v"}}
	deploy := webDeployment(name, "ours:1")
	deploy.Namespace = ns
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	g := graph.New()
	g.Add("role", role)
	g.Add("config", config)
	g.Add("deployment", deploy).DependsOn("config", "role")
	g.Add("service", svc).DependsOn("deployment")
	return g, map[string]client.Object{"role": role, "config": config, "deployment": deploy, "service": svc}
}

// existing returns the names of the children the API server still holds.
func existing(t *testing.T, env *harness.Env, children map[string]client.Object) []string {
	t.Helper()
	var out []string
	for name, obj := range children {
		live := obj.DeepCopyObject().(client.Object)
		err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), live)
		switch {
		case err == nil:
			out = append(out, name)
		case !apierrors.IsNotFound(err):
			t.Fatal(err)
		}
	}
	slices.Sort(out)
	return out
}

// outOfOrder says which child is gone while a child depending on it still exists.
func outOfOrder(exist []string) string {
	dependents := map[string][]string{"role": {"deployment", "service"}, "config": {"deployment", "service"}, "deployment": {"service"}}
	var bad []string
	for child, deps := range dependents {
		if slices.Contains(exist, child) {
			continue
		}
		for _, d := range deps {
			if slices.Contains(exist, d) {
				bad = append(bad, fmt.Sprintf("%s deleted while %s exists", child, d))
			}
		}
	}
	slices.Sort(bad)
	return strings.Join(bad, "; ")
}

// TestIntegrationApplyRevertsAtomicListEscalation: someone adds a verb, and a whole rule granting
// secrets, to our ClusterRole, and an argument to our container (atomic lists: server-side apply
// replaces them whole). One Apply reverts each; a sidecar container and an env var someone adds (lists
// merged by key) cause no write.
func TestIntegrationApplyRevertsAtomicListEscalation(t *testing.T) {
	for _, lean := range []bool{false, true} {
		name := "whole"
		var opts []harness.ManagerOption
		if lean {
			name = "lean"
			opts = append(opts, harness.WithManagerOptions(func(o *manager.Options) {
				childcache.Configure(&o.Cache, cachedKinds()...)
			}))
		}
		t.Run(name, func(t *testing.T) { testAtomicListEscalation(t, fixture.New(t, opts...)) })
	}
}

// testAtomicListEscalation: an unchanged child costs no request, a changed one a write.
func testAtomicListEscalation(t *testing.T, f *fixture.Fixture) {
	a := f.Applier()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: f.NS + "-role"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}}
	deploy := webDeployment("web", "ours:1")
	for _, obj := range []client.Object{role, deploy} {
		live, _, err := a.Apply(t.Context(), f.Owner, obj)
		if err != nil {
			t.Fatal(err)
		}
		f.WaitCached(t, live)
	}
	type step struct {
		name   string
		obj    client.Object
		tamper func(client.Object)
		wantOp apply.Operation
		check  func(live client.Object) string
	}
	steps := []step{
		{"an extra verb", role, func(o client.Object) {
			r := o.(*rbacv1.ClusterRole)
			r.Rules[0].Verbs = append(r.Rules[0].Verbs, "delete")
		}, apply.OperationUpdated, func(o client.Object) string { return fmt.Sprint(o.(*rbacv1.ClusterRole).Rules) }},
		{"an extra rule granting secrets", role, func(o client.Object) {
			r := o.(*rbacv1.ClusterRole)
			r.Rules = append(r.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"*"}})
		}, apply.OperationUpdated, func(o client.Object) string { return fmt.Sprint(o.(*rbacv1.ClusterRole).Rules) }},
		{"an extra container argument", deploy, func(o client.Object) {
			c := &o.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
			c.Args = append(c.Args, "--debug-endpoints")
		}, apply.OperationUpdated, func(o client.Object) string {
			return fmt.Sprint(o.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Args)
		}},
		{"a sidecar and a foreign env var", deploy, func(o client.Object) {
			spec := &o.(*appsv1.Deployment).Spec.Template.Spec
			spec.Containers[0].Env = append(spec.Containers[0].Env, corev1.EnvVar{Name: "INJECTED", Value: "1"})
			spec.Containers = append(spec.Containers, corev1.Container{Name: "sidecar", Image: "mesh:1"})
		}, apply.OperationUnchanged, nil},
	}
	want := map[string]string{
		"an extra verb":                  fmt.Sprint(role.Rules),
		"an extra rule granting secrets": fmt.Sprint(role.Rules),
		"an extra container argument":    "[--port=8080]",
	}
	for _, s := range steps {
		live := s.obj.DeepCopyObject().(client.Object)
		key := client.ObjectKey{Namespace: f.NS, Name: s.obj.GetName()}
		if _, clusterScoped := s.obj.(*rbacv1.ClusterRole); clusterScoped {
			key.Namespace = ""
		}
		if err := f.Env.Client.Get(t.Context(), key, live); err != nil {
			t.Fatal(err)
		}
		s.tamper(live)
		if err := f.Env.Client.Update(t.Context(), live); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		f.WaitCached(t, live)
		f.Counter.Reset()
		got, op, err := a.Apply(t.Context(), f.Owner, s.obj)
		if err != nil || op != s.wantOp {
			t.Errorf("%s: Apply = %s, %v; want %s", s.name, op, err, s.wantOp)
			continue
		}
		wantWrites, wantReads := 0, 0
		if s.wantOp == apply.OperationUpdated {
			wantWrites = 1
		}
		snap := f.Counter.Snapshot()
		if writes, reads := snap.Writes(), snap.Count("get", ""); writes != wantWrites || reads != wantReads {
			t.Errorf("%s: %d writes and %d reads, want %d and %d:\n%s", s.name, writes, reads, wantWrites, wantReads, snap)
		}
		if s.check != nil {
			if diff := cmp.Diff(want[s.name], s.check(got)); diff != "" {
				t.Errorf("%s: not reverted (-want +got):\n%s", s.name, diff)
			}
			f.WaitCached(t, got)
		}
	}
}

// TestIntegrationReconcilerDeletionWhateverTheCache: a Widget with a ConfigMap and a cluster-scoped
// ClusterRole is deleted right after the reconcile that created them, while the children's cache lags
// or is filtered, 10 times. The finalizer goes only once both children are gone (no garbage collector
// would ever remove the ClusterRole), each child gets one DELETE and the Widget one finalizer removal,
// also when reconciles keep coming while the Widget's own cache still shows it with the finalizer, and
// all of it happens in one reconcile.
func TestIntegrationReconcilerDeletionWhateverTheCache(t *testing.T) {
	const rounds = 10
	for _, v := range cacheVariants {
		t.Run(v.name, func(t *testing.T) {
			env := harness.Default()
			wc := setupWidgets(t, env)
			ns := env.Namespace(t)
			counter := harness.NewRequestCounter()
			childGate := harness.NewWatchGate("configmaps", "clusterroles")
			widgetGate := harness.NewWatchGate("widgets")
			cfg := widgetGate.Wrap(childGate.Wrap(counter.Wrap(env.Config)))
			mgr := env.StartManager(t, nil, harness.WithManagerConfig(cfg), harness.WithManagerOptions(func(o *manager.Options) {
				o.Scheme = widgetScheme
				v.configure(o, ns, &corev1.ConfigMap{}, &rbacv1.ClusterRole{})
			}))
			t.Cleanup(childGate.Resume)
			t.Cleanup(widgetGate.Resume)
			for _, l := range []client.ObjectList{&corev1.ConfigMapList{}, &rbacv1.ClusterRoleList{}, &testapi.WidgetList{}} {
				if err := mgr.GetClient().List(t.Context(), l); err != nil {
					t.Fatal(err)
				}
			}
			if v.lag {
				childGate.Pause()
			}
			for round := range rounds {
				name := fmt.Sprintf("w%d", round)
				roleName := fmt.Sprintf("del-%s-%s-%s", v.name, ns[len(ns)-5:], name)
				rec := reconcile.NewReconciler(mgr, reconcile.Hooks[*testapi.Widget]{Children: func(_ context.Context, w *testapi.Widget) (*graph.Graph, error) {
					g := graph.New()
					g.Add("config", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.Name + "-config"}, Data: w.Spec.Data})
					g.Add("role", &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: roleName}, Rules: []rbacv1.PolicyRule{{
						APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{w.Name + "-config"}, Verbs: []string{"get"},
					}}}).DependsOn("config")
					return g, nil
				}}, reconcile.WithName("cachetruth-"+v.name), reconcile.WithOwns(&corev1.ConfigMap{}, &rbacv1.ClusterRole{}))
				w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: testapi.WidgetSpec{Data: map[string]string{"k": "v"}}}
				if err := wc.Create(t.Context(), w); err != nil {
					t.Fatal(err)
				}
				req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}
				waitWidgetCached(t, mgr, req.NamespacedName, func(w *testapi.Widget) bool { return true })
				// Two reconciles: the first creates the config, the second the role that depends on it.
				for range 2 {
					if _, err := rec.Reconcile(t.Context(), req); err != nil {
						t.Fatalf("round %d: %v", round, err)
					}
				}
				if err := wc.Delete(t.Context(), w); err != nil {
					t.Fatal(err)
				}
				waitWidgetCached(t, mgr, req.NamespacedName, func(w *testapi.Widget) bool { return w.DeletionTimestamp != nil })
				widgetGate.Pause() // the Widget's cache keeps showing it, finalizer and all
				counter.Reset()
				gone, passes := false, 0
				for pass := 0; pass < 40; pass++ {
					passes++
					if _, err := rec.Reconcile(t.Context(), req); err != nil {
						t.Fatalf("round %d pass %d: %v", round, pass, err)
					}
					err := wc.Get(t.Context(), req.NamespacedName, &testapi.Widget{})
					if apierrors.IsNotFound(err) {
						gone = true
						break
					}
				}
				if !gone {
					t.Fatalf("round %d: the Widget was not finalized", round)
				}
				for range 3 { // reconciles of the stale copy change nothing
					if _, err := rec.Reconcile(t.Context(), req); err != nil {
						t.Fatalf("round %d: reconcile after finalization: %v", round, err)
					}
				}
				leaked := []string{}
				for _, obj := range []client.Object{&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: roleName}},
					&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-config", Namespace: ns}}} {
					if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
						leaked = append(leaked, fmt.Sprintf("%T %s (%v)", obj, obj.GetName(), err))
					}
				}
				if len(leaked) > 0 {
					t.Fatalf("round %d: the finalizer went while children exist: %v", round, leaked)
				}
				// Passes: the API server answers each DELETE with whether it removed the child at once,
				// so both layers and the finalizer go in one pass, whatever the cache shows.
				type figures struct{ Passes, RoleDeletes, ConfigDeletes, FinalizerRemovals, NotFound int }
				got := figures{Passes: passes}
				for _, r := range counter.Snapshot() {
					switch {
					case r.Verb == "delete" && r.Resource == "clusterroles":
						got.RoleDeletes++
					case r.Verb == "delete" && r.Resource == "configmaps":
						got.ConfigDeletes++
					case r.Verb == "patch" && r.Resource == "widgets" && r.Subresource == "":
						got.FinalizerRemovals++
					}
					if r.StatusCode == 404 && r.Verb != "get" {
						got.NotFound++
					}
				}
				if diff := cmp.Diff(figures{1, 1, 1, 1, 0}, got); diff != "" {
					t.Fatalf("round %d: requests during deletion (-want +got):\n%s\n%s", round, diff, counter.Snapshot())
				}
				widgetGate.Resume()
			}
		})
	}
}

// waitWidgetCached waits until the manager's cache shows the Widget key in the state ok wants.
func waitWidgetCached(t *testing.T, mgr manager.Manager, key client.ObjectKey, ok func(*testapi.Widget) bool) {
	t.Helper()
	harness.Eventually(t, waitTimeout, func() (bool, string) {
		var w testapi.Widget
		if err := mgr.GetClient().Get(t.Context(), key, &w); err != nil {
			return false, err.Error()
		}
		return ok(&w), fmt.Sprintf("cached Widget: deletionTimestamp %v, finalizers %v", w.DeletionTimestamp, w.Finalizers)
	})
}

// TestIntegrationReconcilerPrunesWhatShrankWhileDown: a Widget's graph stopped declaring a ConfigMap
// while no controller ran (its tracked child "old" is still there); a controller started afterwards
// prunes it in its first reconciles, and only it, also when the cache lags from its first list on.
// A prune finds children through the cache (a list by the owner's tracking label, skipped when the
// counts kept from the child events show none but the declared ones): a cache that never shows the
// children ("filtered") prunes nothing, and deletes nothing else either.
func TestIntegrationReconcilerPrunesWhatShrankWhileDown(t *testing.T) {
	for _, v := range cacheVariants {
		t.Run(v.name, func(t *testing.T) {
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "shrunk"}, Spec: testapi.WidgetSpec{Data: map[string]string{"k": "v"}}}
			wc, children := startShrunkWhileDown(t, v, harness.NewWatchGate(), w)

			if v.filter {
				harness.Eventually(t, waitTimeout, func() (bool, string) {
					var got testapi.Widget
					if err := wc.Get(t.Context(), client.ObjectKeyFromObject(w), &got); err != nil {
						return false, err.Error()
					}
					return isReady(&got), fmt.Sprintf("conditions %v", got.Status.Conditions)
				})
				for name, cm := range children {
					if err := wc.Get(t.Context(), client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
						t.Errorf("%s: %v; want it kept (the cache shows no child to prune)", name, err)
					}
				}
				return
			}
			harness.Eventually(t, waitTimeout, func() (bool, string) {
				err := wc.Get(t.Context(), client.ObjectKeyFromObject(children["shrunk-old"]), &corev1.ConfigMap{})
				var got testapi.Widget
				_ = wc.Get(t.Context(), client.ObjectKeyFromObject(w), &got)
				return apierrors.IsNotFound(err), fmt.Sprintf("shrunk-old: %v; the Widget's conditions: %v", err, got.Status.Conditions)
			})
			if err := wc.Get(t.Context(), client.ObjectKeyFromObject(children["shrunk-config"]), &corev1.ConfigMap{}); err != nil {
				t.Errorf("the declared config: %v; want it kept", err)
			}
		})
	}
}

// TestIntegrationReconcilerDeletesWhatShrankWhileDown: a Widget's graph stopped declaring a ConfigMap
// while no controller ran, and the Widget is deleted: its finalizer goes only once the child it no
// longer declares is gone too, also when the cache lags. After the declared children are gone, the
// deletion lists a kind for leftovers only when the counts kept from the child events show one may be
// there. A cache that never shows the children ("filtered") cannot find a child this controller never
// wrote: the Widget is finalized and that child stays.
func TestIntegrationReconcilerDeletesWhatShrankWhileDown(t *testing.T) {
	for _, v := range cacheVariants {
		t.Run(v.name, func(t *testing.T) {
			// Suspended, so that no reconcile prunes the old child before the deletion; with the
			// controller's finalizer already, as an earlier controller left it.
			const fin = "test.convergo.dev/gone"
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "gone", Finalizers: []string{fin},
				Annotations: map[string]string{"convergo.dev/suspend": "true"}}, Spec: testapi.WidgetSpec{Data: map[string]string{"k": "v"}}}
			// The Widgets' watch is not held: the controller must see the deletion.
			wc, children := startShrunkWhileDown(t, v, harness.NewWatchGate("configmaps"), w, reconcile.WithFinalizer(fin))
			if err := wc.Delete(t.Context(), w); err != nil {
				t.Fatal(err)
			}
			harness.Eventually(t, waitTimeout, func() (bool, string) {
				err := wc.Get(t.Context(), client.ObjectKeyFromObject(w), &testapi.Widget{})
				return apierrors.IsNotFound(err), fmt.Sprintf("the Widget: %v", err)
			})
			wantGone := map[string]bool{"gone-config": true, "gone-old": !v.filter}
			for name, cm := range children {
				err := wc.Get(t.Context(), client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
				if diff := cmp.Diff(wantGone[name], apierrors.IsNotFound(err)); diff != "" {
					t.Errorf("%s gone after the Widget's finalizer went (-want +got):\n%s (get: %v)", name, diff, err)
				}
			}
		})
	}
}

// startShrunkWhileDown creates w in a new namespace with what an earlier controller left of it: its
// declared ConfigMap "<name>-config" and "<name>-old", which its graph no longer declares, both
// tracked by w. It then starts a manager with v's cache, running a Reconciler (opts added) whose graph
// declares only the config, lets the informers list, and from then on holds back the watch events
// gate holds for the lagging variants.
func startShrunkWhileDown(t *testing.T, v cacheVariant, gate *harness.WatchGate, w *testapi.Widget, opts ...reconcile.ReconcilerOption) (client.Client, map[string]*corev1.ConfigMap) {
	t.Helper()
	env := harness.Default()
	wc := setupWidgets(t, env)
	ns := env.Namespace(t)
	w.Namespace = ns
	if err := wc.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	children := map[string]*corev1.ConfigMap{}
	for _, name := range []string{w.Name + "-config", w.Name + "-old"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"k": "v"}}
		if err := ownership.Track(w, cm, widgetScheme); err != nil {
			t.Fatal(err)
		}
		if err := wc.Create(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
		children[name] = cm
	}
	mgrOpts := []harness.ManagerOption{harness.WithManagerConfig(gate.Wrap(env.Config)), harness.WithManagerOptions(func(o *manager.Options) {
		o.Scheme = widgetScheme
		v.configure(o, ns, &corev1.ConfigMap{})
	})}
	mgr := env.StartManager(t, func(mgr manager.Manager) error {
		rec := reconcile.NewReconciler(mgr, reconcile.Hooks[*testapi.Widget]{Children: func(_ context.Context, w *testapi.Widget) (*graph.Graph, error) {
			g := graph.New()
			g.Add("config", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.Name + "-config"}, Data: w.Spec.Data})
			return g, nil
		}}, append([]reconcile.ReconcilerOption{reconcile.WithName(fmt.Sprintf("%s-%s-%d", w.Name, v.name, widgetRuns.Add(1))),
			reconcile.WithOwns(&corev1.ConfigMap{})}, opts...)...)
		return rec.SetupWithManager(mgr)
	}, mgrOpts...)
	// The informers list (the first list may come as watch events) before the watches are held.
	for _, l := range []client.ObjectList{&corev1.ConfigMapList{}, &testapi.WidgetList{}} {
		if err := mgr.GetClient().List(t.Context(), l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	if v.lag {
		gate.Pause()
		t.Cleanup(gate.Resume)
	}
	return wc, children
}
