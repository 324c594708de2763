//go:build integration

package sharding_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/childcache"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/reconcile/member"
	"github.com/convergo-dev/convergo/sharding"
	"github.com/convergo-dev/convergo/testing/harness"
)

// Timings of the sharded replicas in these tests (the Lease duration is whole seconds on the server).
const (
	shLease = 2 * time.Second
	shRenew = 1500 * time.Millisecond
	shRetry = 250 * time.Millisecond
)

var (
	widgetsOnce   sync.Once
	widgetsScheme *runtime.Scheme
	widgetsErr    error
)

func widgetClient(t *testing.T, env *harness.Env) client.WithWatch {
	t.Helper()
	widgetsOnce.Do(func() {
		_, widgetsErr = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{testapi.CRDDir()}})
		if widgetsErr == nil {
			widgetsScheme, widgetsErr = harness.NewScheme(testapi.AddToScheme)
		}
	})
	if widgetsErr != nil {
		t.Fatal(widgetsErr)
	}
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: widgetsScheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cut makes a replica's requests fail: cutAll (a killed or partitioned process) or cutLeases (only its
// Lease requests: a replica that can no longer renew).
const (
	cutNone int32 = iota
	cutAll
	cutLeases
)

type cutTransport struct {
	next http.RoundTripper
	cut  *atomic.Int32
	// sent counts the writes (not to Leases) that left the replica, when they leave.
	sent *atomic.Int64
}

func (c cutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	lease := strings.Contains(req.URL.Path, "/leases")
	switch c.cut.Load() {
	case cutAll:
		return nil, errors.New("cut off")
	case cutLeases:
		if lease {
			return nil, errors.New("lease requests cut off")
		}
	}
	if !lease && req.Method != http.MethodGet {
		c.sent.Add(1)
	}
	return c.next.RoundTrip(req)
}

// conflictOnce answers the first hand-over of each Widget by member (a patch of its shard label
// under its resourceVersion, marked as moved from member) with 409 Conflict, unsent.
type conflictOnce struct {
	next   http.RoundTripper
	member string
	mu     sync.Mutex
	seen   map[string]bool
}

func (c *conflictOnce) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPatch || !strings.Contains(req.URL.Path, "/widgets/") || strings.HasSuffix(req.URL.Path, "/status") || req.Body == nil {
		return c.next.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	name := path.Base(req.URL.Path)
	if !bytes.Contains(body, []byte(`moved-from":"`+c.member+`"`)) || !bytes.Contains(body, []byte(`"resourceVersion"`)) {
		return c.next.RoundTrip(req)
	}
	c.mu.Lock()
	first := !c.seen[name]
	c.seen[name] = true
	c.mu.Unlock()
	if !first {
		return c.next.RoundTrip(req)
	}
	status, err := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: http.StatusConflict,
		Reason:  metav1.StatusReasonConflict,
		Message: fmt.Sprintf("Operation cannot be fulfilled on widgets %q: the object has been modified (injected)", name),
		Details: &metav1.StatusDetails{Name: name, Kind: "widgets"},
	})
	if err != nil {
		return nil, err
	}
	return &http.Response{StatusCode: http.StatusConflict, Status: "409 Conflict", Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(status)), Request: req, ProtoMajor: 1, ProtoMinor: 1}, nil
}

// monitor records which replica runs each object's reconcile, from its Children hook to its end, and
// every overlap: two replicas in one object's reconcile at once.
type monitor struct {
	mu       sync.Mutex
	running  map[string]string
	overlaps []string
}

func (m *monitor) enter(key, replica string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if other, ok := m.running[key]; ok && other != replica {
		m.overlaps = append(m.overlaps, fmt.Sprintf("%s reconciled by %s and %s at once", key, other, replica))
	}
	m.running[key] = replica
}

func (m *monitor) leave(key, replica string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running[key] == replica {
		delete(m.running, key)
	}
}

func (m *monitor) check(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range m.overlaps {
		t.Error(o)
	}
}

type replica struct {
	name    string
	shard   *sharding.Shard
	counter *harness.RequestCounter
	cut     atomic.Int32
	sent    atomic.Int64 // writes sent, not to Leases (see cutTransport)
	stop    func()
	// memberCounter counts the requests to the ring's member cluster.
	memberCounter *harness.RequestCounter
}

type ring struct {
	t    *testing.T
	env  *harness.Env
	c    client.Client
	ns   string
	name string
	mon  *monitor
	lag  time.Duration
	// log receives the replicas' logs (none when unset).
	log logr.Logger
	// conflictHandOvers makes the API server answer each replica's first hand-over of each object
	// with a conflict, as if the object had changed since the replica's version.
	conflictHandOvers bool
	// member, when set, is a member cluster "m" where each Widget gets a second ConfigMap.
	member *harness.Env
	mu     sync.Mutex
	reps   map[string]*replica // the members: started, not stopped or cut off
	all    []*replica
}

// newRing returns a ring of replicas of a Widget controller that shards the Widgets of ns. When the
// test ends, it deletes the Widgets while the replicas run (they release their finalizers), then
// stops every replica.
func newRing(t *testing.T, env *harness.Env, c client.Client, ns, name string) *ring {
	r := &ring{t: t, env: env, c: c, ns: ns, name: name, mon: &monitor{running: map[string]string{}}, reps: map[string]*replica{}}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = c.DeleteAllOf(ctx, &testapi.Widget{}, client.InNamespace(ns))
		harness.Eventually(t, time.Minute, func() (bool, string) {
			var ws testapi.WidgetList
			if err := c.List(ctx, &ws, client.InNamespace(ns)); err != nil {
				return false, err.Error()
			}
			return len(ws.Items) == 0, fmt.Sprintf("%d widgets left", len(ws.Items))
		})
		for _, rep := range r.all {
			rep.stop()
		}
	})
	return r
}

// start runs one replica: a manager with caches scoped to its shard, its Shard, and a Widget
// Reconciler whose child is a ConfigMap.
func (r *ring) start(name string) *replica {
	t := r.t
	rep := &replica{name: name, counter: harness.NewRequestCounter(), memberCounter: harness.NewRequestCounter()}
	cfg := harness.DelayWatches(rep.counter.Wrap(r.env.Config), r.lag)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return cutTransport{next: rt, cut: &rep.cut, sent: &rep.sent}
	})
	if r.conflictHandOvers {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return &conflictOnce{next: rt, member: name, seen: map[string]bool{}}
		})
	}
	logger := r.log
	if logger.GetSink() == nil {
		logger = logr.Discard()
	}
	shardCfg := sharding.Config{Ring: r.name, Member: name, Namespace: r.ns, ObjectNamespace: r.ns}
	opts := manager.Options{
		Scheme: widgetsScheme, Logger: logger, Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{r.ns: {}}},
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
		BaseContext: func() context.Context {
			return reconcile.ContextWithObserver(context.Background(), func(_ context.Context, req ctrl.Request) func(ctrl.Result, error) {
				return func(ctrl.Result, error) { r.mon.leave(req.String(), name) }
			})
		},
	}
	childcache.Configure(&opts.Cache, &corev1.ConfigMap{})
	shardCfg.ScopeCache(&opts.Cache, &testapi.Widget{}, &corev1.ConfigMap{})
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	rep.shard, err = sharding.NewShard(mgr, shardCfg, &testapi.Widget{},
		sharding.WithLeaseTimings(shLease, shRenew, shRetry), sharding.WithJoinDelay(2*shRetry), sharding.WithResync(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(rep.shard); err != nil {
		t.Fatal(err)
	}
	children := func(ctx context.Context, w *testapi.Widget) (*graph.Graph, error) {
		r.mon.enter(w.Namespace+"/"+w.Name, name)
		if w.Spec.Data["slow"] != "" {
			select {
			case <-time.After(200 * time.Millisecond): // widens the window for an overlap
			case <-ctx.Done():
			}
		}
		g := graph.New()
		g.Add("config", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.Name}, Data: w.Spec.Data})
		if r.member != nil {
			g.Add("placed", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.Name}, Data: w.Spec.Data}).InCluster("m")
		}
		return g, nil
	}
	recOpts := []reconcile.ReconcilerOption{reconcile.WithName("sharded-" + r.name), reconcile.WithOwns(&corev1.ConfigMap{}),
		reconcile.WithSharding(rep.shard)}
	if r.member != nil {
		set := member.NewSet(mgr)
		mc, err := cluster.New(rep.memberCounter.Wrap(r.member.Config), func(o *cluster.Options) {
			o.Scheme = widgetsScheme
			o.Cache.DefaultNamespaces = map[string]cache.Config{r.ns: {}}
			childcache.Configure(&o.Cache, &corev1.ConfigMap{})
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := set.Add("m", mc); err != nil {
			t.Fatal(err)
		}
		recOpts = append(recOpts, reconcile.WithMemberClusters(set))
	}
	rec := reconcile.NewReconciler(mgr, reconcile.Hooks[*testapi.Widget]{Children: children}, recOpts...)
	if err := rec.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	rep.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("replica %s: %v", name, err)
			}
		})
	}
	r.mu.Lock()
	r.reps[name] = rep
	r.all = append(r.all, rep)
	r.mu.Unlock()
	return rep
}

// members returns the names of the replicas not stopped or cut off.
func (r *ring) members() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.reps))
}

func (r *ring) remove(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.reps, name)
}

// assignment returns each Widget's shard label, and whether every Widget is labelled with the member
// the ring of members assigns it to, reconciled (Ready at its generation) and has its ConfigMap
// labelled likewise and holding its data.
func (r *ring) settled(c client.Client, members []string, generations bool) (map[string]string, bool, string) {
	ctx := context.Background()
	want := sharding.NewRing(members)
	var ws testapi.WidgetList
	if err := c.List(ctx, &ws, client.InNamespace(r.ns)); err != nil {
		return nil, false, err.Error()
	}
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.InNamespace(r.ns), client.HasLabels{ownership.OwnerUIDLabel}); err != nil {
		return nil, false, err.Error()
	}
	byName := map[string]corev1.ConfigMap{}
	for _, cm := range cms.Items {
		byName[cm.Name] = cm
	}
	key := sharding.Label(r.name)
	labels := map[string]string{}
	for _, w := range ws.Items {
		labels[w.Name] = w.Labels[key]
		if w.Labels[key] != want.Owner(w.UID) {
			return labels, false, fmt.Sprintf("%s labelled %q, the ring says %q", w.Name, w.Labels[key], want.Owner(w.UID))
		}
		if w.Annotations[sharding.MovedFromAnnotation] != "" {
			return labels, false, fmt.Sprintf("%s still marked as moved", w.Name)
		}
		if generations && w.Status.ObservedGeneration != w.Generation {
			return labels, false, fmt.Sprintf("%s: observed generation %d of %d", w.Name, w.Status.ObservedGeneration, w.Generation)
		}
		cm, ok := byName[w.Name]
		switch {
		case !ok:
			return labels, false, fmt.Sprintf("%s has no ConfigMap", w.Name)
		case cm.Labels[key] != w.Labels[key]:
			return labels, false, fmt.Sprintf("ConfigMap %s labelled %q, its owner %q", w.Name, cm.Labels[key], w.Labels[key])
		case generations && !maps.Equal(cm.Data, w.Spec.Data):
			return labels, false, fmt.Sprintf("ConfigMap %s holds %v, its owner wants %v", w.Name, cm.Data, w.Spec.Data)
		}
	}
	return labels, true, ""
}

// waitSettled waits until every Widget and its child are labelled as the ring of members says and
// reconciled at the Widget's generation (nothing may change the Widgets meanwhile).
func (r *ring) waitSettled(members []string) map[string]string {
	r.t.Helper()
	return r.wait(members, true)
}

// waitAssigned waits until every Widget and its child are labelled as the ring of members says.
func (r *ring) waitAssigned(members []string) map[string]string {
	r.t.Helper()
	return r.wait(members, false)
}

func (r *ring) wait(members []string, generations bool) map[string]string {
	r.t.Helper()
	var labels map[string]string
	harness.Eventually(r.t, 2*time.Minute, func() (bool, string) {
		var ok bool
		var why string
		labels, ok, why = r.settled(r.c, members, generations)
		return ok, why
	})
	return labels
}

// moves watches the Widgets of ns and records every change of their shard label until stop.
func moves(t *testing.T, c client.WithWatch, ns, key string) (stop func() []string) {
	t.Helper()
	stopRV := movesAt(t, c, ns, key)
	return func() []string {
		var out []string
		for _, m := range stopRV() {
			out = append(out, m.what)
		}
		return out
	}
}

// move is one change of a Widget's shard label, and the resourceVersion that made it.
type move struct {
	what string
	rv   int64
}

// movesAt is moves with the resourceVersion of each move.
func movesAt(t *testing.T, c client.WithWatch, ns, key string) (stop func() []move) {
	t.Helper()
	w, err := c.Watch(t.Context(), &testapi.WidgetList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out []move
	last := map[string]string{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			wd, ok := ev.Object.(*testapi.Widget)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			mu.Lock()
			prev, seen := last[wd.Name]
			now := wd.Labels[key]
			if seen && prev != now {
				rv, _ := strconv.ParseInt(wd.ResourceVersion, 10, 64)
				out = append(out, move{fmt.Sprintf("%s: %s -> %s", wd.Name, prev, now), rv})
			}
			last[wd.Name] = now
			mu.Unlock()
		}
	}()
	return func() []move {
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return out
	}
}

func createWidgets(t *testing.T, c client.Client, ns string, n int) {
	t.Helper()
	for i := range n {
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%02d", i), Namespace: ns},
			Spec: testapi.WidgetSpec{Data: map[string]string{"i": fmt.Sprint(i)}}}
		if i%4 == 0 {
			w.Spec.Data["slow"] = "yes"
		}
		if err := c.Create(t.Context(), w); err != nil {
			t.Fatal(err)
		}
	}
}

// churn changes one Widget's spec every 100 ms until stop, to give overlaps a chance.
func churn(c client.Client, ns string, n int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ctx.Err() == nil; i++ {
			w := &testapi.Widget{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("w%02d", i%n)}, w); err == nil {
				w.Spec.Data["tick"] = fmt.Sprint(i)
				_ = c.Update(ctx, w)
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// writesByObject returns, per Widget name, the resources a replica wrote for it (the Widget and its
// ConfigMap share its name).
func writesByObject(reqs harness.Requests, ns string) map[string][]string {
	out := map[string][]string{}
	for _, q := range reqs.InNamespace(ns) {
		if !q.IsWrite() || (q.Resource != "widgets" && q.Resource != "configmaps") {
			continue
		}
		out[q.Name] = append(out[q.Name], q.Verb+" "+q.Resource+"/"+q.Subresource)
	}
	return out
}

// TestIntegrationShardedReplicas runs replicas of a Widget controller in one ring on the real API
// server and checks the guarantees of sharding through one life: three replicas claim every new
// object; a fourth joins and takes exactly the objects the ring moves to it, from the others only;
// one stops gracefully and one is cut off without releasing its Lease, and the others take their
// objects over; a bogus label is corrected. Throughout, Widgets change every 100 ms, some reconciles
// are slow, and no object is ever reconciled by two replicas at once.
//
// It runs with the replicas' caches current, and with every watch event held back 300 ms.
func TestIntegrationShardedReplicas(t *testing.T) {
	for _, tc := range []struct {
		name string
		lag  time.Duration
	}{
		{"current cache", 0},
		{"lagging cache", 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) { shardedLife(t, tc.lag) })
	}
}

func shardedLife(t *testing.T, lag time.Duration) {
	env := harness.Default()
	c := widgetClient(t, env)
	ns := env.Namespace(t)
	const n = 40
	r := newRing(t, env, c, ns, "widgets")
	r.lag = lag
	key := sharding.Label(r.name)
	for _, name := range []string{"a", "b", "c"} {
		r.start(name)
	}
	// Widgets change every 100 ms during each transition; they stand still while the test checks
	// that everything was reconciled.
	createWidgets(t, c, ns, n)
	stopChurn := churn(c, ns, n)
	r.waitAssigned([]string{"a", "b", "c"})
	stopChurn()
	// New objects: each is claimed by the member the ring assigns it to, and its child follows.
	before := r.waitSettled([]string{"a", "b", "c"})
	for name, rep := range r.reps {
		for obj := range writesByObject(rep.counter.Snapshot(), ns) {
			if before[obj] != name {
				t.Errorf("replica %s wrote %s, which belongs to %s", name, obj, before[obj])
			}
		}
	}

	// A member joins: exactly the objects the ring moves to it move, each once, all to it.
	for _, rep := range r.reps {
		rep.counter.Reset()
	}
	watchMoves := moves(t, c, ns, key)
	stopChurn = churn(c, ns, n)
	r.start("d")
	r.waitAssigned([]string{"a", "b", "c", "d"})
	stopChurn()
	after := r.waitSettled([]string{"a", "b", "c", "d"})
	ring4 := sharding.NewRing([]string{"a", "b", "c", "d"})
	var ws testapi.WidgetList
	if err := c.List(t.Context(), &ws, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var wantMoves []string
	for _, w := range ws.Items {
		if to := ring4.Owner(w.UID); to != before[w.Name] {
			wantMoves = append(wantMoves, fmt.Sprintf("%s: %s -> %s", w.Name, before[w.Name], to))
		}
	}
	gotMoves := watchMoves()
	slices.Sort(wantMoves)
	slices.Sort(gotMoves)
	if diff := cmp.Diff(wantMoves, gotMoves); diff != "" {
		t.Errorf("moves when d joined (-ring +observed):\n%s", diff)
	}
	t.Logf("d joined: %d of %d objects moved", len(gotMoves), n)
	for name, rep := range r.reps {
		for obj := range writesByObject(rep.counter.Snapshot(), ns) {
			if after[obj] != name && before[obj] != name {
				t.Errorf("replica %s wrote %s, which moved from %s to %s", name, obj, before[obj], after[obj])
			}
		}
	}

	// A graceful stop: the others take b's objects over.
	stopChurn = churn(c, ns, n)
	start := time.Now()
	r.reps["b"].stop()
	r.remove("b")
	r.waitAssigned([]string{"a", "c", "d"})
	t.Logf("b stopped: its objects moved in %s", time.Since(start).Round(10*time.Millisecond))
	stopChurn()
	r.waitSettled([]string{"a", "c", "d"})

	// A replica cut off without releasing its Lease: once it is fenced, the others take its objects
	// over. Each of its objects changes right after the cut.
	start = time.Now()
	r.reps["c"].cut.Store(cutAll)
	r.remove("c")
	bump(t, c, ns, after, "c")
	r.waitSettled([]string{"a", "d"})
	took := time.Since(start)
	t.Logf("c cut off: its objects were reconciled by the others %s later (%.1f lease durations)", took.Round(10*time.Millisecond), took.Seconds()/shLease.Seconds())

	// A bogus label: the resync gives the object to the member the ring names.
	w := &testapi.Widget{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "w01"}, w); err != nil {
		t.Fatal(err)
	}
	w.Labels[key] = "nobody"
	if err := c.Update(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	r.waitSettled([]string{"a", "d"})
	r.mon.check(t)
}

// bump changes the spec of every Widget labels assigns to member.
func bump(t *testing.T, c client.Client, ns string, labels map[string]string, member string) {
	t.Helper()
	for name, l := range labels {
		if l != member {
			continue
		}
		// The survivors relabel the Widget meanwhile (a take-over): read again on a conflict.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			w := &testapi.Widget{}
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
				return err
			}
			w.Spec.Data["bumped"] = "yes"
			return c.Update(t.Context(), w)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// notConflict keeps the requests not answered 409 Conflict (they wrote nothing).
func notConflict(q harness.Request) bool { return q.StatusCode != http.StatusConflict }

// notLease keeps the requests that are not about Leases (each replica renews its own and lists the
// ring's: the cost of membership, counted apart).
func notLease(q harness.Request) bool { return q.Resource != "leases" }

// perObject returns a replica's requests about the Widgets (and their ConfigMaps) of ns, by verb and
// resource, and the LISTs of ConfigMaps by owner (TakeChildren's reads from the API server).
func perObject(reqs harness.Requests, ns string) map[string]int {
	out := map[string]int{}
	for _, q := range reqs.Filter(notLease) {
		if q.Verb == "watch" || (q.Namespace != ns && q.Namespace != "") {
			continue
		}
		if q.Resource != "widgets" && q.Resource != "configmaps" {
			continue
		}
		r := q.Resource
		if q.Subresource != "" {
			r += "/" + q.Subresource
		}
		out[q.Verb+" "+r]++
	}
	return out
}

// TestIntegrationShardRequests counts, with nothing else changing, the exact requests sharding costs:
// claiming a new object, moving one to a member that joined, taking one over from a member that
// stopped; and checks that converged replicas send none but their Lease's.
//
// It runs with the replicas' caches current, and with every watch event held back 300 ms: the
// member an object moved to must not take a child its cache does not show yet for missing.
func TestIntegrationShardRequests(t *testing.T) {
	for _, tc := range []struct {
		name string
		ring string // each its own: the moves metric is counted per ring
		lag  time.Duration
	}{
		{"current cache", "quiet", 0},
		{"lagging cache", "quiet-lagging", 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) { shardRequests(t, tc.ring, tc.lag) })
	}
}

func shardRequests(t *testing.T, ringName string, lag time.Duration) {
	env := harness.Default()
	c := widgetClient(t, env)
	ns := env.Namespace(t)
	const n = 12
	r := newRing(t, env, c, ns, ringName)
	r.lag = lag
	movesBefore := movesMetric(t, r.name) // the registry is the process's: -count runs share it
	a := r.start("a")
	createWidgets(t, c, ns, n)
	r.waitSettled([]string{"a"})

	// Converged: no request but the Lease's.
	quiet := func(reps ...*replica) {
		t.Helper()
		for _, rep := range reps {
			rep.counter.Reset()
		}
		// Many Lease renewals and ring observations fall in this window.
		time.Sleep(5 * time.Second)
		for _, rep := range reps {
			if got := rep.counter.Snapshot().Filter(notLease).Filter(func(q harness.Request) bool { return q.Verb != "watch" }); len(got) != 0 {
				t.Errorf("replica %s, converged, sent %d requests:\n%s", rep.name, len(got), got)
			}
		}
	}
	quiet(a)

	// A member joins: per moved object, the old member hands over with one patch; the new one
	// relabels each child and clears the mark, and lists the children of each type by owner once per
	// round of objects that moved to it (a round takes all that arrived by then).
	a.counter.Reset()
	b := r.start("b")
	labels := r.waitSettled([]string{"a", "b"})
	moved := 0
	for _, l := range labels {
		if l == "b" {
			moved++
		}
	}
	if moved == 0 || moved == n {
		t.Fatalf("%d of %d objects moved to b; the ring should move some, not all", moved, n)
	}
	// Nothing else: no status write (the conditions do not change) and no event.
	oldReqs, newReqs := perObject(a.counter.Snapshot(), ns), perObject(b.counter.Snapshot(), ns)
	t.Logf("%d objects moved; a sent %v, b sent %v", moved, oldReqs, newReqs)
	if diff := cmp.Diff(map[string]int{"patch widgets": moved}, oldReqs); diff != "" {
		t.Errorf("the old member's requests for %d moved objects (-want +got):\n%s", moved, diff)
	}
	if lists := newReqs["list configmaps"]; lists < 1 || lists > moved {
		t.Errorf("the new member listed children %d times for %d moved objects, want 1 to %d (once per round)", lists, moved, moved)
	}
	delete(newReqs, "list configmaps")
	if diff := cmp.Diff(map[string]int{"patch configmaps": moved, "patch widgets": moved}, newReqs); diff != "" {
		t.Errorf("the new member's requests for %d moved objects (-want +got):\n%s", moved, diff)
	}
	for _, rep := range []*replica{a, b} {
		if got := rep.counter.Snapshot().Filter(func(q harness.Request) bool { return q.Resource == "events" }); len(got) != 0 {
			t.Errorf("replica %s emitted events while objects moved:\n%s", rep.name, got)
		}
	}
	quiet(a, b)

	// A member stops: the survivor claims each object with one patch, then takes them over in one
	// round: one LIST of the children, a patch per child and per object's mark.
	b.counter.Reset()
	a.stop()
	r.remove("a")
	r.waitSettled([]string{"b"})
	takeover := perObject(b.counter.Snapshot(), ns)
	taken := n - moved
	t.Logf("%d objects taken over; b sent %v", taken, takeover)
	if diff := cmp.Diff(map[string]int{"patch widgets": 2 * taken, "patch configmaps": taken, "list configmaps": 1}, takeover); diff != "" {
		t.Errorf("requests to take over %d objects (-want +got):\n%s", taken, diff)
	}

	// A new object: one claim, then the reconcile any operator sends.
	b.counter.Reset()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: ns}, Spec: testapi.WidgetSpec{Data: map[string]string{"late": "yes"}}}
	if err := c.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	r.waitSettled([]string{"b"})
	if got := perObject(b.counter.Snapshot(), ns)["patch widgets"]; got != 2 {
		t.Errorf("claiming and reconciling a new object: %d Widget patches, want 2 (claim, finalizer)", got)
	}
	quiet(b)

	// The moves metric counts each claim and hand-over by reason, per member.
	wantMoves := map[string]float64{
		"a " + sharding.ReasonNew: n, "a " + sharding.ReasonRebalance: float64(moved),
		"b " + sharding.ReasonTakeOver: float64(taken), "b " + sharding.ReasonNew: 1,
	}
	gotMoves := movesMetric(t, r.name)
	for k, v := range movesBefore {
		if gotMoves[k] -= v; gotMoves[k] == 0 {
			delete(gotMoves, k)
		}
	}
	if diff := cmp.Diff(wantMoves, gotMoves); diff != "" {
		t.Errorf("convergo_shard_moves_total of ring %s (-want +got):\n%s", r.name, diff)
	}
}

// movesMetric returns convergo_shard_moves_total of ring by "member reason".
func movesMetric(t *testing.T, ring string) map[string]float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "convergo_shard_moves_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["ring"] == ring {
				out[l["member"]+" "+l["reason"]] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// TestIntegrationShardZombieStopsWriting: a replica whose Lease requests fail (it can no longer
// renew) stops writing once its renew deadline passed, before any other may take over; the survivor
// fences its Lease and only then takes its objects.
func TestIntegrationShardZombieStopsWriting(t *testing.T) {
	env := harness.Default()
	c := widgetClient(t, env)
	ns := env.Namespace(t)
	const n = 12
	r := newRing(t, env, c, ns, "zombie")
	a := r.start("a")
	r.start("b")
	createWidgets(t, c, ns, n)
	r.waitSettled([]string{"a", "b"})
	key := sharding.Label(r.name)
	watchMoves := movesAt(t, c, ns, key)

	a.cut.Store(cutLeases)
	harness.Eventually(t, time.Minute, func() (bool, string) {
		return a.shard.Writable() != nil, "a still may write"
	})
	// From here on a must not send a write. Its objects keep changing; b must take them over.
	sentBefore := a.sent.Load()
	stopChurn := churn(c, ns, n)
	r.remove("a")
	r.waitAssigned([]string{"b"})
	stopChurn()
	r.waitSettled([]string{"b"})
	if got := a.sent.Load() - sentBefore; got != 0 {
		t.Errorf("a sent %d writes after its renew deadline passed", got)
	}
	// b fenced a's Lease, and took no object of a's before: every move comes after the fence in
	// etcd's order.
	lease := &coordinationv1.Lease{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "zombie-a"}, lease); err != nil {
		t.Fatal(err)
	}
	if got := sharding.FencedBy(ptr.Deref(lease.Spec.HolderIdentity, "")); got != "b" {
		t.Errorf("a's Lease is held by %q, want fenced by b", ptr.Deref(lease.Spec.HolderIdentity, ""))
	}
	fenced, _ := strconv.ParseInt(lease.ResourceVersion, 10, 64)
	got := watchMoves()
	if len(got) == 0 {
		t.Error("no object moved from a to b")
	}
	for _, m := range got {
		if m.rv < fenced {
			t.Errorf("%s at resourceVersion %d, before b fenced a at %d", m.what, m.rv, fenced)
		}
	}
}

// TestIntegrationShardFailover: three replicas hold perMember Widgets each; one is cut off as a
// SIGKILL would leave it (no request leaves it, its Lease is not released) and each of its Widgets
// changes. The survivors take them over: every Widget ends reconciled at its generation by the
// survivor the ring names, no two replicas ever reconcile one at once, and each Widget taken over
// costs exactly its claim, its child's relabel, its mark's removal, the apply of its change and its
// status: nothing is written twice, and nothing by a replica that does not own it. The children are
// listed once per round of take-overs, not once per Widget. Tests do not assert on time.
func TestIntegrationShardFailover(t *testing.T) {
	const perMember = 100
	env := harness.Default()
	c := widgetClient(t, env)
	ns := env.Namespace(t)
	r := newRing(t, env, c, ns, "failover")
	all, survivors := []string{"a", "b", "c"}, []string{"a", "b"}
	for _, name := range all {
		r.start(name)
	}
	createWidgets(t, c, ns, perMember*len(all))
	before := r.waitSettled(all)
	for _, rep := range r.reps {
		rep.counter.Reset()
	}

	start := time.Now()
	r.reps["c"].cut.Store(cutAll)
	r.remove("c")
	bump(t, c, ns, before, "c")
	after := r.waitSettled(survivors)
	t.Logf("c cut off: its Widgets were reconciled by the others %s later", time.Since(start).Round(10*time.Millisecond))

	taken := 0
	for _, l := range before {
		if l == "c" {
			taken++
		}
	}
	want := []string{"patch configmaps/", "patch configmaps/", "patch widgets/", "patch widgets/", "patch widgets/status"}
	written := map[string]bool{}
	lists, conflicts := 0, 0
	for _, name := range survivors {
		reqs := r.reps[name].counter.Snapshot()
		lists += perObject(reqs, ns)["list configmaps"]
		conflicts += len(reqs.InNamespace(ns)) - len(reqs.Filter(notConflict).InNamespace(ns))
		// The test's bump races the take-over: a claim sent between bump's read and its update is
		// answered 409 Conflict, writes nothing, and is sent again on the new version.
		for obj, writes := range writesByObject(reqs.Filter(notConflict), ns) {
			written[obj] = true
			if before[obj] != "c" || after[obj] != name {
				t.Errorf("replica %s wrote %s, which went from %s to %s: %v", name, obj, before[obj], after[obj], writes)
				continue
			}
			slices.Sort(writes)
			if diff := cmp.Diff(want, writes); diff != "" {
				t.Errorf("replica %s's writes for %s, taken over (-want +got):\n%s", name, obj, diff)
			}
		}
	}
	for obj, l := range before {
		if l == "c" && !written[obj] {
			t.Errorf("%s, taken over, was written by no survivor", obj)
		}
	}
	t.Logf("%d Widgets taken over by %v; the survivors listed children %d times; %d writes answered 409 Conflict", taken, survivors, lists, conflicts)
	if lists == 0 || lists >= taken {
		t.Errorf("the survivors listed children %d times for %d Widgets taken over, want once per round (fewer than the Widgets)", lists, taken)
	}
	r.mon.check(t)
}

// TestIntegrationShardHandOverConflicts: a member joins, and the API server answers each old
// member's first hand-over of each object with a conflict (as when the object changed since the
// member's version). Every object still moves, exactly once, to the member the ring names; each
// conflict is logged at V(1) as a hand-over tried again, and no conflict is logged at the error
// level.
func TestIntegrationShardHandOverConflicts(t *testing.T) {
	env := harness.Default()
	c := widgetClient(t, env)
	ns := env.Namespace(t)
	const n = 24
	logs, log := sharding.NewLogRecorder()
	r := newRing(t, env, c, ns, "conflicts")
	r.log, r.conflictHandOvers = log, true
	r.start("a")
	r.start("b")
	createWidgets(t, c, ns, n)
	before := r.waitSettled([]string{"a", "b"})
	watchMoves := moves(t, c, ns, sharding.Label(r.name))
	r.start("c")
	r.waitSettled([]string{"a", "b", "c"})

	ring3 := sharding.NewRing([]string{"a", "b", "c"})
	var ws testapi.WidgetList
	if err := c.List(t.Context(), &ws, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var wantMoves []string
	for _, w := range ws.Items {
		if to := ring3.Owner(w.UID); to != before[w.Name] {
			wantMoves = append(wantMoves, fmt.Sprintf("%s: %s -> %s", w.Name, before[w.Name], to))
		}
	}
	gotMoves := watchMoves()
	slices.Sort(wantMoves)
	slices.Sort(gotMoves)
	if diff := cmp.Diff(wantMoves, gotMoves); diff != "" {
		t.Errorf("moves when c joined (-ring +observed):\n%s", diff)
	}
	retried := 0
	for _, e := range logs.Entries() {
		switch {
		case e.Error && e.Conflict():
			t.Errorf("a conflict logged at the error level: %s", e)
		case !e.Error && e.Conflict() && strings.HasPrefix(e.Msg, "hand-over conflicted"):
			retried++
		}
	}
	t.Logf("%d objects moved; %d hand-overs tried again after a conflict", len(gotMoves), retried)
	if retried != len(wantMoves) {
		t.Errorf("%d hand-overs logged as tried again after a conflict, want %d (one per object moved)", retried, len(wantMoves))
	}
	r.mon.check(t)
}

// TestIntegrationShardedWithMember: replicas of a sharded Widget operator that also places a
// ConfigMap per Widget in a member cluster. Each member child is written by the replica that holds its
// Widget, and by no other; when a replica stops, the one that takes its Widgets over finds their member
// children holding the intent and writes nothing to the member.
func TestIntegrationShardedWithMember(t *testing.T) {
	env := harness.Default()
	m, err := harness.Start(t.Context())
	if err != nil {
		t.Fatalf("start the member cluster: %v", err)
	}
	t.Cleanup(func() { _ = m.Stop() })
	c := widgetClient(t, env)
	ns := env.Namespace(t)
	if err := m.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	const n = 12
	r := newRing(t, env, c, ns, "placed")
	r.member = m
	for _, name := range []string{"a", "b"} {
		r.start(name)
	}
	createWidgets(t, c, ns, n)
	owners := r.waitSettled([]string{"a", "b"})
	harness.Eventually(t, 2*time.Minute, func() (bool, string) {
		var cms corev1.ConfigMapList
		if err := m.Client.List(t.Context(), &cms, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		return len(cms.Items) == n, fmt.Sprintf("%d of %d member ConfigMaps", len(cms.Items), n)
	})
	for name, rep := range r.reps {
		for obj := range writesByObject(rep.memberCounter.Snapshot(), ns) {
			if owners[obj] != name {
				t.Errorf("replica %s wrote %s in the member cluster, which belongs to %s", name, obj, owners[obj])
			}
		}
	}

	a := r.reps["a"]
	a.memberCounter.Reset()
	r.reps["b"].stop()
	r.remove("b")
	r.waitSettled([]string{"a"})
	if writes := a.memberCounter.Snapshot().Filter(func(q harness.Request) bool { return q.IsWrite() }); len(writes) != 0 {
		t.Errorf("replica a, taking b's Widgets over, wrote to the member cluster:\n%s", writes)
	}
}
