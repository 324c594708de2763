//go:build integration

package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/reconcile/member"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/harness"
	"github.com/convergo-dev/convergo/testing/optest"
)

// memberEnv is a member cluster of these tests: its own kube-apiserver and etcd.
type memberEnv struct {
	name string
	env  *harness.Env
}

// startMembers starts one control plane per name, stopped when the test ends.
func startMembers(t *testing.T, names ...string) []memberEnv {
	t.Helper()
	out := make([]memberEnv, len(names))
	errs := make([]error, len(names))
	done := make(chan int)
	for i, n := range names {
		go func() {
			out[i].name = n
			out[i].env, errs[i] = harness.Start(context.Background())
			done <- i
		}()
	}
	for range names {
		<-done
	}
	for i, m := range out {
		if m.env != nil {
			t.Cleanup(func() {
				if err := m.env.Stop(); err != nil {
					t.Errorf("stop member %s: %v", m.name, err)
				}
			})
		}
		if errs[i] != nil {
			t.Fatalf("start member cluster %s: %v", names[i], errs[i])
		}
	}
	return out
}

// placedChildren is the graph of a Widget spread over the hub and members a and b: base (hub) <-
// cm-a (member a), cm-b (member b) <- summary (hub).
func placedChildren(_ context.Context, w *testapi.Widget) (*graph.Graph, error) {
	cm := func(name string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
	}
	g := graph.New()
	g.Add("base", cm(w.Name+"-base", map[string]string{"greeting": w.Spec.Data["greeting"]}))
	g.Add("cm-a", cm(w.Name, map[string]string{"placed": "a"})).InCluster("a").DependsOn("base")
	g.Add("cm-b", cm(w.Name, map[string]string{"placed": "b"})).InCluster("b").DependsOn("base")
	g.Add("summary", cm(w.Name+"-summary", map[string]string{"members": "a,b"})).DependsOn("cm-a", "cm-b")
	return g, nil
}

// placement is one run of the placed Widget operator: the hub's manager with the variant's cache, and
// a member.Set of a and b, each member's cache shaped by the variant too, every cluster's requests
// counted.
type placement struct {
	ns       string
	hub      client.Client
	counters map[string]*harness.RequestCounter // "" for the hub
	gates    []*harness.WatchGate
	recs     *optest.Reconciles
	members  map[string]memberEnv
	// cuts stand between the operator and each member's API server.
	cuts map[string]*harness.Partition
}

func startPlacement(t *testing.T, v cacheVariant, members []memberEnv) *placement {
	t.Helper()
	env := harness.Default()
	c := setupWidgets(t, env)
	p := &placement{ns: env.Namespace(t), hub: c, counters: map[string]*harness.RequestCounter{"": harness.NewRequestCounter()},
		recs: optest.NewReconciles(), members: map[string]memberEnv{}, cuts: map[string]*harness.Partition{}}
	for _, m := range members {
		p.members[m.name] = m
		p.counters[m.name] = harness.NewRequestCounter()
		p.cuts[m.name] = harness.NewPartition(t, m.env.Config)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.ns}}
		if err := m.env.Client.Create(t.Context(), ns); err != nil {
			t.Fatal(err)
		}
	}
	hubGate := harness.NewWatchGate("configmaps") // the children's events only: Widgets still come
	p.gates = append(p.gates, hubGate)
	name := fmt.Sprintf("placed-%s-%d", v.name, widgetRuns.Add(1))
	var mgr manager.Manager
	mgr = env.StartManager(t, func(mgr manager.Manager) error {
		set := member.NewSet(mgr)
		for _, m := range members {
			gate := harness.NewWatchGate("configmaps")
			p.gates = append(p.gates, gate)
			cfg := p.cuts[m.name].Config()
			cfg.Timeout = 5 * time.Second // an unreachable member fails a request instead of holding a worker
			mc, err := cluster.New(gate.Wrap(p.counters[m.name].Wrap(cfg)), func(o *cluster.Options) {
				o.Scheme = widgetScheme
				mo := manager.Options{}
				v.configure(&mo, p.ns, &corev1.ConfigMap{})
				o.Cache = mo.Cache
				o.Cache.DefaultNamespaces = map[string]cache.Config{p.ns: {}}
			})
			if err != nil {
				return err
			}
			if err := set.Add(m.name, mc); err != nil {
				return err
			}
		}
		r := reconcile.NewReconciler(mgr, reconcile.Hooks[*testapi.Widget]{Children: placedChildren},
			reconcile.WithName(name), reconcile.WithOwns(&corev1.ConfigMap{}), reconcile.WithMemberClusters(set),
			reconcile.WithPollInterval(200*time.Millisecond))
		return r.SetupWithManager(mgr)
	}, harness.WithManagerConfig(hubGate.Wrap(p.counters[""].Wrap(env.Config))), p.recs.Observing(),
		harness.WithManagerOptions(func(o *manager.Options) {
			o.Scheme = widgetScheme
			v.configure(o, p.ns, &corev1.ConfigMap{})
			// Only the test's namespace: other tests' Widgets are not this controller's.
			o.Cache.DefaultNamespaces = map[string]cache.Config{p.ns: {}}
		}))
	_ = mgr
	for _, g := range p.gates {
		t.Cleanup(g.Resume) // before the manager stops
	}
	if v.lag {
		p.waitSynced(t)
		for _, g := range p.gates {
			g.Pause()
		}
	}
	return p
}

// waitSynced waits until a first Widget reconcile has run, so that every cache has listed.
func (p *placement) waitSynced(t *testing.T) {
	t.Helper()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "primer", Namespace: p.ns}}
	if err := p.hub.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	harness.WaitForObject(t, p.hub, client.ObjectKeyFromObject(w), &testapi.Widget{}, waitTimeout, isReady)
}

// memberClient returns a client of member name's API server (not the operator's).
func (p *placement) memberClient(name string) client.Client { return p.members[name].env.Client }

// requests returns the requests counted per cluster since the counters were reset, about the objects
// of widget name (the hub's ConfigMaps and Widget, the members' ConfigMaps).
func (p *placement) requests(name string) map[string]harness.Requests {
	out := map[string]harness.Requests{}
	for cluster, c := range p.counters {
		out[cluster] = c.Snapshot().InNamespace(p.ns).Filter(func(r harness.Request) bool {
			return r.Name == "" || strings.HasPrefix(r.Name, name)
		})
	}
	return out
}

// TestIntegrationMemberClusters: a Widget in the hub places ConfigMaps in members a and b (separate
// kube-apiservers) between two of its own, base <- cm-a, cm-b <- summary. In every cache variant
// (members' caches too): it converges in dependency order across the clusters, each member child
// carries the owner's tracking marks and no owner reference; a member child deleted by hand is
// applied again; deletion goes summary, then the member children, then base, and leaves nothing. With
// a current cache, a converged Widget's reconcile sends no request to any cluster, and a member child
// that existed before is never taken.
func TestIntegrationMemberClusters(t *testing.T) {
	members := startMembers(t, "a", "b")
	for _, v := range []cacheVariant{{name: "current"}, {name: "lagging", lag: true}, {name: "filtered", filter: true}} {
		t.Run(v.name, func(t *testing.T) {
			p := startPlacement(t, v, members)
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: p.ns}, Spec: testapi.WidgetSpec{Data: map[string]string{"greeting": "hi"}}}
			if err := p.hub.Create(t.Context(), w); err != nil {
				t.Fatal(err)
			}
			w = waitWidget(t, p.hub, w, "Ready", isReady)
			for _, m := range []string{"a", "b"} {
				cm := &corev1.ConfigMap{}
				if err := p.memberClient(m).Get(t.Context(), client.ObjectKey{Namespace: p.ns, Name: "app"}, cm); err != nil {
					t.Fatalf("member %s: %v", m, err)
				}
				if !ownership.IsTrackedBy(cm, w) || len(cm.OwnerReferences) != 0 || cm.Data["placed"] != m {
					t.Errorf("member %s's ConfigMap: labels %v, owner references %v, data %v; want tracked by the Widget, no owner reference, placed=%s", m, cm.Labels, cm.OwnerReferences, cm.Data, m)
				}
			}
			creates := map[string]int{}
			for cluster, rs := range p.requests("app") {
				creates[cluster] = rs.Count("patch", "configmaps")
			}
			if diff := cmp.Diff(map[string]int{"": 2, "a": 1, "b": 1}, creates); diff != "" {
				t.Errorf("server-side applies of ConfigMaps to converge, per cluster (-want +got):\n%s", diff)
			}

			if v.name == "current" {
				for _, c := range p.counters {
					c.Reset()
				}
				mark := p.recs.Mark()
				annotate(t, p.hub, w, "convergo.test/poke", "1")
				p.recs.WaitFor(t, client.ObjectKeyFromObject(w), mark, waitTimeout)
				got := map[string]int{}
				for cluster, rs := range p.requests("app") {
					got[cluster] = len(rs)
				}
				if diff := cmp.Diff(map[string]int{"": 0, "a": 0, "b": 0}, got); diff != "" {
					t.Errorf("requests of a converged Widget's reconcile, per cluster (-want +got):\n%s", diff)
				}
			}

			if v.filter {
				// The cache shows no child, so no event of one: nothing to wake the owner on drift.
				deletePlaced(t, p, w)
				return
			}
			// Drift in a member: the child deleted there by hand comes back.
			gone := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: "app"}}
			if err := p.memberClient("b").Delete(t.Context(), gone); err != nil {
				t.Fatal(err)
			}
			if v.lag {
				for _, g := range p.gates {
					g.Resume() // the owner hears of a member's change through the member's watch
				}
			}
			harness.WaitForObject(t, p.memberClient("b"), client.ObjectKeyFromObject(gone), &corev1.ConfigMap{}, waitTimeout,
				func(cm *corev1.ConfigMap) bool { return cm.UID != "" && cm.UID != gone.UID })
			if v.lag {
				for _, g := range p.gates {
					g.Pause() // the deletion, again without watch events
				}
			}

			deletePlaced(t, p, w)
		})
	}
}

// deletePlaced deletes the Widget and checks the order of the deletion across the clusters: summary,
// then the member children, then base, each DELETE sent once, nothing left.
func deletePlaced(t *testing.T, p *placement, w *testapi.Widget) {
	t.Helper()
	for _, c := range p.counters {
		c.Reset()
	}
	if err := p.hub.Delete(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	harness.WaitForDeletion(t, p.hub, w, waitTimeout)
	at, sent := deleteTimes(p.counters)
	t.Logf("DELETEs as sent: %v", at)
	checkDeletedInOrder(t, at, []string{"hub app-summary"}, []string{"a app", "b app"})
	checkDeletedInOrder(t, at, []string{"a app", "b app"}, []string{"hub app-base"})
	if diff := cmp.Diff(map[string]int{"hub app-summary": 1, "a app": 1, "b app": 1, "hub app-base": 1}, sent); diff != "" {
		t.Errorf("DELETEs per child (-want +got):\n%s", diff)
	}
	for _, m := range []string{"a", "b"} {
		err := p.memberClient(m).Get(t.Context(), client.ObjectKey{Namespace: p.ns, Name: "app"}, &corev1.ConfigMap{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("member %s's ConfigMap after the Widget's deletion: %v, want gone", m, err)
		}
	}
}

// deleteTimes returns when each ConfigMap DELETE the counters saw was sent, by "<cluster> <name>"
// ("hub" for the hub), and how many each got.
func deleteTimes(counters map[string]*harness.RequestCounter) (map[string]time.Time, map[string]int) {
	at, n := map[string]time.Time{}, map[string]int{}
	for cluster, c := range counters {
		label := cmpOr(cluster, "hub")
		for _, r := range c.Snapshot() {
			if r.Verb == "delete" && r.Resource == "configmaps" {
				what := label + " " + r.Name
				if _, ok := at[what]; !ok {
					at[what] = r.Time
				}
				n[what]++
			}
		}
	}
	return at, n
}

// checkDeletedInOrder checks that each DELETE in before was sent (and sent once) ahead of each in after.
func checkDeletedInOrder(t *testing.T, at map[string]time.Time, before, after []string) {
	t.Helper()
	for _, b := range before {
		for _, a := range after {
			tb, okb := at[b]
			ta, oka := at[a]
			if !okb || !oka || !tb.Before(ta) {
				t.Errorf("DELETE of %s (sent %v) not before DELETE of %s (sent %v)", b, okb, a, oka)
			}
		}
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func waitWidget(t *testing.T, c client.Client, w *testapi.Widget, what string, cond func(*testapi.Widget) bool) *testapi.Widget {
	t.Helper()
	got := &testapi.Widget{}
	t.Logf("waiting for %s", what)
	harness.WaitForObject(t, c, client.ObjectKeyFromObject(w), got, waitTimeout, cond)
	return got
}

// TestIntegrationMemberCutMidDeletion: member b becomes unreachable (its connection cut) just before
// the Widget placed in a and b is deleted. The deletion goes as far as it can (summary, member a's
// child) and waits: the Widget reads Ready=False, Reconciling=True, DeletionFailed, naming the node
// and member b, its finalizer held, base (which member b's child depends on) kept. Once b is back the
// deletion finishes, each DELETE sent once, nothing left in any cluster.
func TestIntegrationMemberCutMidDeletion(t *testing.T) {
	members := startMembers(t, "a", "b")
	p := startPlacement(t, cacheVariant{name: "current"}, members)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: p.ns}, Spec: testapi.WidgetSpec{Data: map[string]string{"greeting": "hi"}}}
	if err := p.hub.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	waitWidget(t, p.hub, w, "Ready", isReady)
	for _, c := range p.counters {
		c.Reset()
	}
	p.cuts["b"].Cut()
	if err := p.hub.Delete(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	said := waitWidget(t, p.hub, w, "the failed deletion said", func(w *testapi.Widget) bool {
		return condition(w, status.Reconciling) == "True/DeletionFailed"
	})
	msg := meta.FindStatusCondition(said.GetConditions(), status.Reconciling).Message
	for _, want := range []string{`"cm-b"`, `member cluster "b"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("Reconciling message %q does not name %s", msg, want)
		}
	}
	if c := condition(said, status.Ready); c != "False/DeletionFailed" {
		t.Errorf("Ready = %s, want False/DeletionFailed", c)
	}
	base := &corev1.ConfigMap{}
	if err := p.hub.Get(t.Context(), client.ObjectKey{Namespace: p.ns, Name: "app-base"}, base); err != nil {
		t.Errorf("base while member b's child cannot be deleted: %v, want kept", err)
	}
	err := p.memberClient("a").Get(t.Context(), client.ObjectKey{Namespace: p.ns, Name: "app"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("member a's child while b is cut: %v, want deleted", err)
	}

	if err := p.cuts["b"].Mend(); err != nil {
		t.Fatal(err)
	}
	harness.WaitForDeletion(t, p.hub, w, waitTimeout)
	at, sent := deleteTimes(p.counters)
	checkDeletedInOrder(t, at, []string{"hub app-summary"}, []string{"a app", "b app"})
	checkDeletedInOrder(t, at, []string{"a app", "b app"}, []string{"hub app-base"})
	answered := map[string]int{}
	for cluster, c := range p.counters {
		for _, r := range c.Snapshot() {
			if r.Verb == "delete" && r.Resource == "configmaps" && r.StatusCode != 0 {
				answered[cmpOr(cluster, "hub")+" "+r.Name]++
			}
		}
	}
	if diff := cmp.Diff(map[string]int{"hub app-summary": 1, "a app": 1, "b app": 1, "hub app-base": 1}, answered); diff != "" {
		t.Errorf("DELETEs that reached an API server, per child (-want +got):\n%s (all sent: %v)", diff, sent)
	}
	err = p.memberClient("b").Get(t.Context(), client.ObjectKey{Namespace: p.ns, Name: "app"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("member b's child after it came back: %v, want deleted", err)
	}
}

// TestIntegrationMemberNeverSteals: a ConfigMap that exists in member a under the name of a Widget's
// child there, made by someone else, is not taken: the Widget reads Stalled, NotOwned, naming the
// child and the member, the ConfigMap is left exactly as it was, and deleting the Widget leaves it too.
func TestIntegrationMemberNeverSteals(t *testing.T) {
	members := startMembers(t, "a", "b")
	for _, v := range []cacheVariant{{name: "current"}, {name: "filtered", filter: true}} {
		t.Run(v.name, func(t *testing.T) {
			p := startPlacement(t, v, members)
			theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: "taken"}, Data: map[string]string{"owner": "someone else"}}
			if err := p.memberClient("a").Create(t.Context(), theirs); err != nil {
				t.Fatal(err)
			}
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: p.ns}}
			if err := p.hub.Create(t.Context(), w); err != nil {
				t.Fatal(err)
			}
			said := waitWidget(t, p.hub, w, "Stalled, NotOwned", func(w *testapi.Widget) bool {
				return condition(w, status.Stalled) == "True/NotOwned"
			})
			msg := meta.FindStatusCondition(said.GetConditions(), status.Stalled).Message
			for _, want := range []string{`"cm-a"`, `member cluster "a"`} {
				if !strings.Contains(msg, want) {
					t.Errorf("Stalled message %q does not name %s", msg, want)
				}
			}
			if err := p.hub.Delete(t.Context(), w); err != nil {
				t.Fatal(err)
			}
			harness.WaitForDeletion(t, p.hub, w, waitTimeout)
			got := &corev1.ConfigMap{}
			if err := p.memberClient("a").Get(t.Context(), client.ObjectKeyFromObject(theirs), got); err != nil {
				t.Fatalf("the ConfigMap that was not the Widget's, after its deletion: %v", err)
			}
			if diff := cmp.Diff(theirs.Data, got.Data); diff != "" || len(got.Labels) != 0 || got.ResourceVersion != theirs.ResourceVersion {
				t.Errorf("the ConfigMap that was not the Widget's was changed: labels %v, data diff %s, resourceVersion %s -> %s", got.Labels, diff, theirs.ResourceVersion, got.ResourceVersion)
			}
		})
	}
}
