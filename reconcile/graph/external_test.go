package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/internal/applytest"
)

// thing is an object of the in-memory external system the tests use.
type thing struct {
	Value, Owner string
	// Pending: created but not ready yet.
	Pending bool
	// Lingers: deletions take one more Delete call to complete.
	Lingers bool
}

// store is an in-memory external system of things, implementing External[string]: the desired state
// is the thing's value. It counts calls and can fail them.
type store struct {
	mu     sync.Mutex
	things map[string]*thing
	calls  map[string]int
	// fail, when set, fails every call.
	fail error
	// beforeApply, when set, runs at the start of Apply.
	beforeApply func(id string)
	// found holds, per Apply, "<id> exists=<found.Exists>".
	found []string
}

func newStore() *store { return &store{things: map[string]*thing{}, calls: map[string]int{}} }

func (s *store) Kind() string { return "mem.thing" }

func (s *store) Observe(_ context.Context, id, want string) (Observation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls["observe"]++
	if s.fail != nil {
		return Observation{}, s.fail
	}
	t, ok := s.things[id]
	if !ok {
		return Observation{}, nil
	}
	obs := Observation{Exists: true, Owner: t.Owner, UpToDate: t.Value == want, Ready: !t.Pending}
	if t.Pending {
		obs.Reason = "starting"
	}
	return obs, nil
}

func (s *store) Apply(_ context.Context, id, want string, found Observation, owner string) error {
	if s.beforeApply != nil {
		s.beforeApply(id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls["apply"]++
	s.found = append(s.found, fmt.Sprintf("%s exists=%v", id, found.Exists))
	if s.fail != nil {
		return s.fail
	}
	t, ok := s.things[id]
	if !ok {
		t = &thing{}
		s.things[id] = t
	}
	t.Value, t.Owner = want, owner
	return nil
}

func (s *store) Delete(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls["delete"]++
	if s.fail != nil {
		return s.fail
	}
	if t, ok := s.things[id]; ok && t.Lingers {
		t.Lingers = false
		return nil
	}
	delete(s.things, id)
	return nil
}

func (s *store) Release(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls["release"]++
	if t, ok := s.things[id]; ok {
		t.Owner = ""
	}
	return nil
}

func (s *store) get(id string) (thing, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.things[id]
	if !ok {
		return thing{}, false
	}
	return *t, true
}

func (s *store) put(id string, t thing) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.things[id] = &t
}

func (s *store) count(call string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[call]
}

// externalFixture is an owner in a fake cluster, an Applier and a store.
type externalFixture struct {
	c      client.WithWatch
	writes *applytest.WriteCounter
	a      *apply.Applier
	owner  *corev1.ConfigMap
	s      *store
}

func newExternalFixture(t *testing.T) *externalFixture {
	t.Helper()
	f := &externalFixture{writes: &applytest.WriteCounter{}, s: newStore()}
	owner := applytest.Owner("app")
	f.c = applytest.NewFake(t, f.writes, owner)
	f.a = apply.NewApplier(f.c, f.c)
	f.owner = &corev1.ConfigMap{}
	if err := f.c.Get(t.Context(), client.ObjectKeyFromObject(owner), f.owner); err != nil {
		t.Fatal(err)
	}
	return f
}

// recorded returns the identities recorded on the owner, as the API server has them.
func (f *externalFixture) recorded(t *testing.T) []ExternalRecord {
	t.Helper()
	live := &corev1.ConfigMap{}
	if err := f.c.Get(t.Context(), client.ObjectKeyFromObject(f.owner), live); err != nil {
		t.Fatal(err)
	}
	entries, err := readRecord(live)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func TestExternalNodeCreatesRecordsFirstAndConverges(t *testing.T) {
	f := newExternalFixture(t)
	f.s.beforeApply = func(id string) {
		// The identity is on the owner before the object is created: a crash now loses nothing.
		if diff := cmp.Diff([]ExternalRecord{{Node: "db", Kind: "mem.thing", ID: id}}, f.recorded(t)); diff != "" {
			t.Errorf("record when Apply runs (-want +got):\n%s", diff)
		}
	}
	build := func(value string) *Graph {
		g := New()
		AddExternal(g, "db", f.s, "app-db", value)
		g.Add("config", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config"}}).DependsOn("db")
		return g
	}

	res, err := build("v1").Apply(t.Context(), f.a, f.owner)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := f.s.get("app-db"); got != (thing{Value: "v1", Owner: "uid-app"}) {
		t.Errorf("created thing = %+v", got)
	}
	if !res.Ready || res.Child("db").Operation != apply.OperationCreated || res.Child("config").Operation != apply.OperationCreated {
		t.Errorf("first apply: ready %v, db %q, config %q", res.Ready, res.Child("db").Operation, res.Child("config").Operation)
	}
	if res.ObserveAgain != defaultObserveInterval {
		t.Errorf("ObserveAgain = %v, want %v", res.ObserveAgain, defaultObserveInterval)
	}

	// Converged: one observe, no write to either system.
	writes, observes, applies := f.writes.N, f.s.count("observe"), f.s.count("apply")
	res, err = build("v1").Apply(t.Context(), f.a, f.owner)
	if err != nil {
		t.Fatal(err)
	}
	if got := [3]int{f.writes.N - writes, f.s.count("observe") - observes, f.s.count("apply") - applies}; got != [3]int{0, 1, 0} {
		t.Errorf("converged apply: cluster writes, observes, external applies = %v, want [0 1 0]", got)
	}
	if res.Child("db").Operation != apply.OperationUnchanged || !res.Ready {
		t.Errorf("converged: db %q, ready %v", res.Child("db").Operation, res.Ready)
	}

	// Drift outside the cluster is repaired.
	f.s.put("app-db", thing{Value: "changed by hand", Owner: "uid-app"})
	if res, err = build("v1").Apply(t.Context(), f.a, f.owner); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.s.get("app-db"); got.Value != "v1" || res.Child("db").Operation != apply.OperationUpdated {
		t.Errorf("after drift: thing %+v, operation %q", got, res.Child("db").Operation)
	}
}

func TestExternalNodeReadinessHoldsDependents(t *testing.T) {
	f := newExternalFixture(t)
	f.s.put("app-db", thing{Value: "v1", Owner: "uid-app", Pending: true})
	g := New()
	AddExternal(g, "db", f.s, "app-db", "v1").ObserveEvery(time.Hour)
	g.Add("config", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config"}}).DependsOn("db")
	res, err := g.Apply(t.Context(), f.a, f.owner)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"db: starting", "config waits for db: starting"}
	if diff := cmp.Diff(want, res.Waiting); diff != "" {
		t.Errorf("Waiting (-want +got):\n%s", diff)
	}
	if res.Child("config").Applied || res.Ready {
		t.Errorf("config applied %v, ready %v: want neither", res.Child("config").Applied, res.Ready)
	}
	if res.ObserveAgain != notReadyObserveInterval {
		t.Errorf("ObserveAgain = %v, want %v for a node that is not ready", res.ObserveAgain, notReadyObserveInterval)
	}
}

func TestExternalNodeNeverSteals(t *testing.T) {
	tests := []struct {
		name     string
		existing thing
		adopt    bool
		wantErr  bool
		want     thing
	}{
		{name: "unmarked, not recorded", existing: thing{Value: "theirs"}, wantErr: true, want: thing{Value: "theirs"}},
		{name: "another owner's mark", existing: thing{Value: "theirs", Owner: "uid-other"}, wantErr: true, want: thing{Value: "theirs", Owner: "uid-other"}},
		{name: "adopted when allowed", existing: thing{Value: "theirs"}, adopt: true, want: thing{Value: "ours", Owner: "uid-app"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newExternalFixture(t)
			f.s.put("app-db", tt.existing)
			build := func() *Graph {
				g := New()
				n := AddExternal(g, "db", f.s, "app-db", "ours")
				if tt.adopt {
					n.AdoptExisting()
				}
				return g
			}
			_, err := build().Apply(t.Context(), f.a, f.owner)
			if gotErr := errors.Is(err, ErrNotOwned); gotErr != tt.wantErr {
				t.Fatalf("Apply error = %v, want ErrNotOwned: %v", err, tt.wantErr)
			}
			if got, _ := f.s.get("app-db"); got != tt.want {
				t.Errorf("thing = %+v, want %+v", got, tt.want)
			}
			// Deleting the owner never deletes what is not its own.
			del, err := build().Delete(t.Context(), f.a, f.owner)
			if err != nil || !del.Done {
				t.Fatalf("Delete = %+v, %v", del, err)
			}
			_, exists := f.s.get("app-db")
			if exists != tt.wantErr {
				t.Errorf("after the owner's deletion the thing exists: %v, want %v", exists, tt.wantErr)
			}
		})
	}
}

func TestExternalNodeDeletionOrderAndConfirmation(t *testing.T) {
	f := newExternalFixture(t)
	build := func() *Graph {
		g := New()
		AddExternal(g, "db", f.s, "app-db", "v1")
		g.Add("config", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config"}}).DependsOn("db")
		return g
	}
	if _, err := build().Apply(t.Context(), f.a, f.owner); err != nil {
		t.Fatal(err)
	}
	f.s.put("app-db", thing{Value: "v1", Owner: "uid-app", Lingers: true})

	var passes []string
	for i := 0; i < 5; i++ {
		del, err := build().Delete(t.Context(), f.a, f.owner)
		if err != nil {
			t.Fatal(err)
		}
		_, dbExists := f.s.get("app-db")
		cm := &corev1.ConfigMap{}
		cmErr := f.c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "app-config"}, cm)
		passes = append(passes, fmt.Sprintf("done=%v db=%v config=%v", del.Done, dbExists, cmErr == nil))
		if del.Done {
			break
		}
	}
	// The dependent cluster child goes first; the external object counts as gone only once the system
	// says so (its first Delete leaves it lingering).
	want := []string{"done=false db=true config=false", "done=false db=true config=false", "done=true db=false config=false"}
	if diff := cmp.Diff(want, passes); diff != "" {
		t.Errorf("deletion passes (-want +got):\n%s", diff)
	}
}

func TestExternalNodeKeepOnDelete(t *testing.T) {
	f := newExternalFixture(t)
	build := func() *Graph {
		g := New()
		AddExternal(g, "db", f.s, "app-db", "v1").KeepOnDelete()
		return g
	}
	if _, err := build().Apply(t.Context(), f.a, f.owner); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]ExternalRecord{{Node: "db", Kind: "mem.thing", ID: "app-db", Keep: true}}, f.recorded(t)); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	del, err := build().Delete(t.Context(), f.a, f.owner)
	if err != nil || !del.Done {
		t.Fatalf("Delete = %+v, %v", del, err)
	}
	got, ok := f.s.get("app-db")
	if !ok || got.Owner != "" || f.s.count("delete") != 0 {
		t.Errorf("kept thing: exists %v, %+v, deletes %d: want it released, not deleted", ok, got, f.s.count("delete"))
	}
}

func TestPruneExternal(t *testing.T) {
	f := newExternalFixture(t)
	g := New()
	AddExternal(g, "db", f.s, "db-1", "v1")
	AddExternal(g, "cache", f.s, "cache-1", "v1").KeepOnDelete()
	if _, err := g.Apply(t.Context(), f.a, f.owner); err != nil {
		t.Fatal(err)
	}
	// The spec renames the database and drops the cache; kinds of no declared node come from
	// WithExternalKinds.
	g = New(WithExternalKinds(External[string](f.s)))
	AddExternal(g, "db", f.s, "db-2", "v1")
	res, err := g.Apply(t.Context(), f.a, f.owner)
	if err != nil || !res.Ready {
		t.Fatalf("Apply = %+v, %v", res, err)
	}
	pruned, err := g.PruneExternal(t.Context(), f.a, f.owner)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(pruned) // the two were recorded by concurrent applies, in either order
	if diff := cmp.Diff([]string{"cache: mem.thing cache-1", "db: mem.thing db-1"}, pruned); diff != "" {
		t.Errorf("pruned (-want +got):\n%s", diff)
	}
	_, db1 := f.s.get("db-1")
	cache, cacheKept := f.s.get("cache-1")
	if db1 || !cacheKept || cache.Owner != "" {
		t.Errorf("db-1 exists %v (want deleted), cache-1 kept %v owner %q (want released)", db1, cacheKept, cache.Owner)
	}
	if diff := cmp.Diff([]ExternalRecord{{Node: "db", Kind: "mem.thing", ID: "db-2"}}, f.recorded(t)); diff != "" {
		t.Errorf("record after pruning (-want +got):\n%s", diff)
	}

	// A recorded kind the graph does not know is an error, and its entry stays.
	g = New()
	g.Add("config", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}})
	if _, err := g.PruneExternal(t.Context(), f.a, f.owner); err == nil || !strings.Contains(err.Error(), "WithExternalKinds") {
		t.Errorf("PruneExternal without the kind = %v, want an error naming WithExternalKinds", err)
	}
	if len(f.recorded(t)) != 1 {
		t.Errorf("record lost an entry of an unknown kind: %+v", f.recorded(t))
	}
}

func TestExternalNodeFaults(t *testing.T) {
	f := newExternalFixture(t)
	build := func() *Graph {
		g := New()
		AddExternal(g, "db", f.s, "app-db", "v1")
		g.Add("config", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config"}}).DependsOn("db")
		return g
	}
	if _, err := build().Apply(t.Context(), f.a, f.owner); err != nil {
		t.Fatal(err)
	}
	f.s.fail = errors.New("connection refused")
	res, err := build().Apply(t.Context(), f.a, f.owner)
	if err == nil || !strings.Contains(err.Error(), `external node "db" (mem.thing app-db): observe: connection refused`) {
		t.Errorf("Apply while the system is down = %v", err)
	}
	if res.Ready || res.ObserveAgain != notReadyObserveInterval {
		t.Errorf("result while down: ready %v, ObserveAgain %v", res.Ready, res.ObserveAgain)
	}
	// A deletion waits, and reports it, until the system confirms.
	var del *DeleteResult
	for range 3 { // the cluster child first, then the external object, which fails
		if del, err = build().Delete(t.Context(), f.a, f.owner); del.Done {
			t.Fatalf("Delete while the system is down is done: %+v", del)
		}
	}
	if err == nil || !strings.Contains(err.Error(), `delete external node "db" (mem.thing app-db): observe: connection refused`) {
		t.Errorf("Delete while down = %v, want the error naming the node", err)
	}
	f.s.fail = nil
	for range 2 {
		if del, err = build().Delete(t.Context(), f.a, f.owner); err != nil {
			t.Fatal(err)
		}
	}
	if _, exists := f.s.get("app-db"); !del.Done || exists {
		t.Errorf("after the system is back: done %v, thing exists %v", del.Done, exists)
	}
}

func TestExternalNodeWriteGuard(t *testing.T) {
	f := newExternalFixture(t)
	stopped := errors.New("the shard is stopping")
	a := apply.NewApplier(f.c, f.c, apply.WithWriteGuard(func() error { return stopped }))
	g := New()
	AddExternal(g, "db", f.s, "app-db", "v1")
	if _, err := g.Apply(t.Context(), a, f.owner); !errors.Is(err, stopped) {
		t.Errorf("Apply under a refusing guard = %v, want %v", err, stopped)
	}
	if _, ok := f.s.get("app-db"); ok || len(f.recorded(t)) != 0 {
		t.Errorf("a refused apply wrote: thing exists %v, record %+v", ok, f.recorded(t))
	}
}

func TestValidateExternalNodes(t *testing.T) {
	s := newStore()
	tests := []struct {
		name  string
		build func(g *Graph)
		want  string
	}{
		{"empty identity", func(g *Graph) { AddExternal(g, "db", s, "", "v") }, `external node "db" has an empty identity`},
		{"no External", func(g *Graph) { AddExternal[string](g, "db", nil, "x", "v") }, `external node "db" has no External`},
		{"foreground", func(g *Graph) {
			AddExternal(g, "db", s, "x", "v").DeletionPropagation(metav1.DeletePropagationForeground)
		}, "applies to cluster children only"},
		{"same object twice", func(g *Graph) { AddExternal(g, "a", s, "x", "v"); AddExternal(g, "b", s, "x", "v") }, "declare the same object external mem.thing x"},
		{"adopt on a cluster child", func(g *Graph) { g.Add("cm", &corev1.ConfigMap{}).AdoptExisting() }, "apply.WithAdoptOrphans"},
		{"ExternalFuncs without ApplyFn", func(g *Graph) {
			AddExternal(g, "db", ExternalFuncs[string]{KindName: "mem.thing", ObserveFn: s.Observe, DeleteFn: s.Delete}, "x", "v")
		}, `its ExternalFuncs has no ApplyFn`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := New()
			tt.build(g)
			err := g.Validate()
			if !errors.Is(err, ErrInvalidGraph) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v, want ErrInvalidGraph with %q", err, tt.want)
			}
		})
	}
}

func TestRenderExternalNode(t *testing.T) {
	g := New()
	AddExternal(g, "db", newStore(), "x", "v")
	g.Add("config", &corev1.ConfigMap{}).DependsOn("db")
	want := "flowchart LR\n  c0[(\"db<br/>mem.thing\")]\n  c1[\"config<br/>ConfigMap\"]\n  c0 --> c1\n"
	if diff := cmp.Diff(want, g.Mermaid(nil)); diff != "" {
		t.Errorf("Mermaid (-want +got):\n%s", diff)
	}
	if !strings.Contains(g.DOT(nil), `"db" [label="db\nmem.thing", shape=cylinder];`) {
		t.Errorf("DOT lacks the external node's cylinder:\n%s", g.DOT(nil))
	}
}

// TestExternalCallsTimed: each call to an external system is counted, by kind, step and result, in
// convergo_external_call_duration_seconds.
func TestExternalCallsTimed(t *testing.T) {
	count := func(step, result string) uint64 {
		m := &dto.Metric{}
		if err := externalCallSeconds.WithLabelValues("mem.thing", step, result).(prometheus.Histogram).Write(m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram().GetSampleCount()
	}
	f := newExternalFixture(t)
	before := [3]uint64{count("observe", "ok"), count("apply", "ok"), count("observe", "error")}
	g := New()
	AddExternal(g, "db", f.s, "timed-db", "v1")
	if _, err := g.Apply(t.Context(), f.a, f.owner); err != nil {
		t.Fatal(err)
	}
	f.s.mu.Lock()
	f.s.fail = errors.New("down")
	f.s.mu.Unlock()
	if _, err := g.Apply(t.Context(), f.a, f.owner); err == nil {
		t.Fatal("Apply with the system down succeeded")
	}
	got := [3]uint64{count("observe", "ok") - before[0], count("apply", "ok") - before[1], count("observe", "error") - before[2]}
	// Created: observe, apply, observe again; then one failed observe.
	if diff := cmp.Diff([3]uint64{2, 1, 1}, got); diff != "" {
		t.Errorf("timed calls (-want +got):\n%s", diff)
	}
}
