//go:build integration

package deletiontest_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/builders"
	"github.com/convergo-dev/convergo/internal/marks"
	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/cluster"
	"github.com/convergo-dev/convergo/testing/harness"
)

// Generous: the machine running the tests is often loaded, and the garbage collector works in the
// background.
const timeout = 3 * time.Minute

func TestMain(m *testing.M) {
	harness.Main(m, harness.WithFullCluster(cluster.WithNodes(1)),
		harness.WithCRDPaths(testapi.CRDDir()), harness.WithSchemeAdders(testapi.AddToScheme))
}

// startOperator runs a Reconciler of Widgets named name with children, in a manager whose requests
// counter counts.
// gcSeesWidgets makes waitGCSeesWidgets probe the garbage collector once per test binary.
var gcSeesWidgets sync.Once

// waitGCSeesWidgets waits until the garbage collector acts on the deletion of Widgets: it learns new
// kinds from discovery on a 30 s cycle (several on a loaded machine), and until then a Widget deleted
// with foreground propagation keeps its dependents, and a dependent of a deleted Widget is collected
// only when its rate-limited recheck of the owner comes around. A probe Widget (no operator runs, so
// no finalizer) with one dependent is deleted with foreground propagation: it goes only once the
// collector watches Widgets and has deleted the dependent. Call it before any operator starts.
func waitGCSeesWidgets(t *testing.T) {
	t.Helper()
	gcSeesWidgets.Do(func() {
		env := harness.Default()
		ns := env.Namespace(t)
		probe := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "gc-probe", Namespace: ns}}
		if err := env.Client.Create(t.Context(), probe); err != nil {
			t.Fatal(err)
		}
		dependent := configMap("gc-probe-dependent", ns)
		dependent.OwnerReferences = []metav1.OwnerReference{{APIVersion: testapi.GroupVersion.String(), Kind: "Widget", Name: probe.Name, UID: probe.UID}}
		if err := env.Client.Create(t.Context(), dependent); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := env.Client.Delete(t.Context(), probe, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
			t.Fatal(err)
		}
		harness.WaitForDeletion(t, env.Client, probe, 10*time.Minute)
		t.Logf("the garbage collector handled a Widget's foreground deletion %v after it was asked", time.Since(start).Round(time.Millisecond))
	})
}

func startOperator(t *testing.T, name string, children func(context.Context, *testapi.Widget) (*graph.Graph, error), owns ...client.Object) *harness.RequestCounter {
	t.Helper()
	env := harness.Default()
	counter := harness.NewRequestCounter()
	env.StartManager(t, func(mgr manager.Manager) error {
		r := reconcile.NewReconciler(mgr, reconcile.Hooks[*testapi.Widget]{Children: children},
			reconcile.WithName(name), reconcile.WithOwns(owns...))
		return r.SetupWithManager(mgr)
	}, harness.WithManagerConfig(counter.Wrap(env.Config)))
	return counter
}

// createReady creates a Widget and waits until it is Ready.
func createReady(t *testing.T, env *harness.Env, ns, name string) *testapi.Widget {
	t.Helper()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: testapi.WidgetSpec{Data: map[string]string{"k": "v"}}}
	if err := env.Client.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	harness.WaitForObject(t, env.Client, client.ObjectKeyFromObject(w), w, timeout, func(w *testapi.Widget) bool { return status.IsReady(w) })
	return w
}

func configMap(name, ns string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"k": "v"}}
}

// ownedBy describes what of owner obj carries: an owner reference, the tracking label and annotation.
func ownedBy(obj, owner client.Object) string {
	var refs []string
	for _, r := range obj.GetOwnerReferences() {
		if r.UID == owner.GetUID() {
			refs = append(refs, "ownerRef")
		}
	}
	if obj.GetLabels()[ownership.OwnerUIDLabel] != "" {
		refs = append(refs, "owner-uid label")
	}
	if obj.GetAnnotations()[marks.OwnerName] != "" {
		refs = append(refs, "owner-name annotation")
	}
	return fmt.Sprint(refs)
}

// TestKeepOnDeleteOutlivesTheOwner: a Widget's kept "data" ConfigMap survives the Widget, whichever
// propagation the Widget is deleted with, after the garbage collector has had its chance (a plain
// ConfigMap with an owner reference to the Widget, outside the graph, is collected), and nothing of
// the Widget is left on it; "app", which is not kept, is deleted. The Widget is deleted while the
// operator is stopped, so that its finalizer holds it: with foreground propagation the garbage
// collector deletes the Widget's dependents meanwhile, before any finalizer runs, and the kept child
// survives that only because it never had an owner reference. The operator, started again, releases it
// and removes the finalizer.
func TestKeepOnDeleteOutlivesTheOwner(t *testing.T) {
	waitGCSeesWidgets(t)
	for _, prop := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground} {
		t.Run(string(prop), func(t *testing.T) {
			env := harness.Default()
			ns := env.Namespace(t)
			name := "keep-" + strings.ToLower(string(prop))
			children := func(_ context.Context, w *testapi.Widget) (*graph.Graph, error) {
				g := graph.New()
				g.Add("data", configMap(w.Name+"-data", "")).KeepOnDelete()
				g.Add("app", configMap(w.Name+"-app", "")).DependsOn("data")
				return g, nil
			}
			var w *testapi.Widget
			t.Run("converge", func(t *testing.T) { // the operator runs until this subtest ends
				startOperator(t, name, children, &corev1.ConfigMap{})
				w = createReady(t, env, ns, "w")
			})
			if t.Failed() {
				return
			}
			bystander := configMap("bystander", ns)
			bystander.OwnerReferences = []metav1.OwnerReference{{APIVersion: testapi.GroupVersion.String(), Kind: "Widget", Name: w.Name, UID: w.UID}}
			if err := env.Client.Create(t.Context(), bystander); err != nil {
				t.Fatal(err)
			}
			data, app := configMap(w.Name+"-data", ns), configMap(w.Name+"-app", ns)
			for _, o := range []client.Object{data, app} {
				if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(o), o); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff([]string{"[owner-uid label owner-name annotation]", "[ownerRef owner-uid label]"},
				[]string{ownedBy(data, w), ownedBy(app, w)}); diff != "" {
				t.Errorf("before deletion, what data and app carry of the Widget (-want +got):\n%s", diff)
			}

			start := time.Now()
			if err := env.Client.Delete(t.Context(), w, client.PropagationPolicy(prop)); err != nil {
				t.Fatal(err)
			}
			if prop == metav1.DeletePropagationForeground {
				// The finalizer holds the Widget; the garbage collector deletes its dependents now.
				harness.WaitForDeletion(t, env.Client, bystander, timeout)
				harness.WaitForDeletion(t, env.Client, app, timeout)
				if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(data), &corev1.ConfigMap{}); err != nil {
					t.Fatalf("the garbage collector deleted the kept child before the owner's finalizer ran: %v", err)
				}
			}
			startOperator(t, name, children, &corev1.ConfigMap{})
			harness.WaitForDeletion(t, env.Client, w, timeout)
			harness.WaitForDeletion(t, env.Client, bystander, timeout) // the garbage collector had its chance
			harness.WaitForDeletion(t, env.Client, app, timeout)
			t.Logf("Widget deleted with %s propagation, its bystander collected, in %v", prop, time.Since(start).Round(time.Millisecond))
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(data), data); err != nil {
				t.Fatalf("the kept child did not outlive its owner: %v", err)
			}
			got := fmt.Sprintf("%s, %s=%s", ownedBy(data, w), apply.DeletionPolicyAnnotation, data.Annotations[apply.DeletionPolicyAnnotation])
			if diff := cmp.Diff("[], convergo.dev/deletion-policy=", got); diff != "" {
				t.Errorf("the kept child after its owner's deletion (-want +got):\n%s", diff)
			}
		})
	}
}

// TestForegroundChildWaitsForItsDependents: a Widget's "web" Deployment, deleted with foreground
// propagation, is gone only after its ReplicaSets and Pods are, and the "config" ConfigMap it depends on
// is deleted only after it is gone. The order is read from the resourceVersions of the watch events
// that report the deletions (etcd's revisions, one sequence for the whole cluster).
func TestForegroundChildWaitsForItsDependents(t *testing.T) {
	waitGCSeesWidgets(t)
	env := harness.Default()
	ns := env.Namespace(t)
	counter := startOperator(t, "foreground", func(_ context.Context, w *testapi.Widget) (*graph.Graph, error) {
		labels := builders.Labels{Name: "web", Instance: w.Name}
		pod := builders.PodTemplate(labels, []corev1.Container{builders.Container("web", "registry.example/web:1")})
		g := graph.New()
		g.Add("config", configMap(w.Name+"-config", ""))
		g.Add("web", builders.Deployment(w.Name+"-web", "", labels, pod, builders.WithReplicas(2))).
			DependsOn("config").ReadyWhen(builders.DeploymentAvailable).
			DeletionPropagation(metav1.DeletePropagationForeground)
		return g, nil
	}, &corev1.ConfigMap{}, &appsv1.Deployment{})
	w := createReady(t, env, ns, "w")
	log := watchDeletions(t, env, ns)

	counter.Reset()
	start := time.Now()
	if err := env.Client.Delete(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	harness.WaitForDeletion(t, env.Client, w, timeout)
	elapsed := time.Since(start)
	web, config := "Deployment/"+w.Name+"-web", "ConfigMap/"+w.Name+"-config"
	harness.Eventually(t, timeout, func() (bool, string) {
		return log.deletedAll(web, config), log.String()
	})

	type order struct {
		// Foreground: the Deployment carried the foregroundDeletion finalizer while it was deleted.
		Foreground bool
		// Dependents: how many ReplicaSets and Pods it had, and how many were gone before it was.
		Dependents, GoneBefore int
		// ConfigAfter: the ConfigMap was deleted after the Deployment was gone.
		ConfigAfter bool
	}
	got := order{Foreground: log.wasForeground(web), ConfigAfter: log.deletedAt(config) > log.deletedAt(web)}
	for _, name := range log.names("ReplicaSet/", "Pod/") {
		got.Dependents++
		if at := log.deletedAt(name); at != 0 && at < log.deletedAt(web) {
			got.GoneBefore++
		}
	}
	if got.Dependents < 3 { // one ReplicaSet, two Pods
		t.Fatalf("the Deployment had %d ReplicaSets and Pods, want at least 3: the test proves nothing\n%s", got.Dependents, log)
	}
	if diff := cmp.Diff(order{Foreground: true, Dependents: got.Dependents, GoneBefore: got.Dependents, ConfigAfter: true}, got); diff != "" {
		t.Errorf("deletion order (-want +got):\n%s\n%s", diff, log)
	}
	deletes := counter.Snapshot().InNamespace(ns).Filter(func(r harness.Request) bool { return r.Verb == "delete" })
	if diff := cmp.Diff(map[string]int{"delete": 2}, deletes.ByVerb()); diff != "" {
		t.Errorf("DELETE requests of the operator (-want +got):\n%s\n%s", diff, deletes)
	}
	t.Logf("Widget with a foreground Deployment (1 ReplicaSet, 2 Pods) deleted in %v", elapsed.Round(time.Millisecond))
}

// deletionLog records, from watches of a namespace, which objects existed, the resourceVersion at which
// each was deleted, and which carried the foregroundDeletion finalizer while being deleted.
type deletionLog struct {
	mu         sync.Mutex
	seen       map[string]bool
	deleted    map[string]uint64
	foreground map[string]bool
}

// watchDeletions starts watches of the Deployments, ReplicaSets, Pods and ConfigMaps in ns; each starts
// with the objects that exist, so no event after this call is missed.
func watchDeletions(t *testing.T, env *harness.Env, ns string) *deletionLog {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	l := &deletionLog{seen: map[string]bool{}, deleted: map[string]uint64{}, foreground: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	kinds := map[string]client.ObjectList{"Deployment": &appsv1.DeploymentList{}, "ReplicaSet": &appsv1.ReplicaSetList{},
		"Pod": &corev1.PodList{}, "ConfigMap": &corev1.ConfigMapList{}}
	for kind, list := range kinds {
		w, err := wc.Watch(ctx, list, client.InNamespace(ns))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					if obj, isObj := ev.Object.(client.Object); isObj {
						l.record(kind, ev.Type, obj)
					}
				}
			}
		})
	}
	return l
}

func (l *deletionLog) record(kind string, typ watch.EventType, obj client.Object) {
	l.mu.Lock()
	defer l.mu.Unlock()
	name := kind + "/" + obj.GetName()
	l.seen[name] = true
	if obj.GetDeletionTimestamp() != nil && slices.Contains(obj.GetFinalizers(), metav1.FinalizerDeleteDependents) {
		l.foreground[name] = true
	}
	if typ == watch.Deleted {
		rv, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
		l.deleted[name] = rv
	}
}

// deletedAll reports whether every named object was seen deleted.
func (l *deletionLog) deletedAll(names ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range names {
		if l.deleted[n] == 0 {
			return false
		}
	}
	return true
}

// deletedAt returns the resourceVersion of name's deletion, 0 when not seen.
func (l *deletionLog) deletedAt(name string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deleted[name]
}

// wasForeground reports whether name carried the foregroundDeletion finalizer while being deleted.
func (l *deletionLog) wasForeground(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.foreground[name]
}

// names returns the objects seen whose "Kind/name" starts with one of prefixes, sorted.
func (l *deletionLog) names(prefixes ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for n := range l.seen {
		for _, p := range prefixes {
			if strings.HasPrefix(n, p) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}

// String lists every object seen with the resourceVersion of its deletion (and "foreground").
func (l *deletionLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lines []string
	for n := range l.seen {
		line := fmt.Sprintf("%s deleted at %d", n, l.deleted[n])
		if l.foreground[n] {
			line += " (foreground)"
		}
		lines = append(lines, line)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
