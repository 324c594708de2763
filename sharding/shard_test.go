package sharding

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// newTestShard returns the shard of member me in ring "welcome", observed once with the members
// that renewed (a Shard without manager: classify, Begin and the guard only).
func newTestShard(t *testing.T, me string, renewed ...string) (*Shard, map[string]*Member) {
	t.Helper()
	members, clk, c := newMembers(t, append([]string{me}, renewed...)...)
	renewAll(t, members[me])
	for _, n := range renewed {
		renewAll(t, members[n])
	}
	s := newShard(Config{Ring: "welcome", Member: me, Namespace: "ops"}, members[me], c)
	s.observe(t.Context()) // the members that renewed are live, none ready: they just joined
	clk.Step(s.mcfg.joinDelay)
	s.observe(t.Context()) // now they are ready, and this member claims
	return s, members
}

func object(uid, label string) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid)}}
	if label != "" {
		o.Labels = map[string]string{Label("welcome"): label}
	}
	return o
}

// firstOwnedBy returns a UID the ring of members assigns to member.
func firstOwnedBy(t *testing.T, members []string, member string) string {
	t.Helper()
	r := NewRing(members)
	for i := range 1000 {
		uid := "uid-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if r.Owner(types.UID(uid)) == member {
			return uid
		}
	}
	t.Fatalf("no uid of %d owned by %s", 1000, member)
	return ""
}

// TestShardClassify: what an object is to a member, from its label and the ring of live members.
func TestShardClassify(t *testing.T) {
	s, _ := newTestShard(t, "a", "b")
	ab := []string{"a", "b"}
	mine, theirs := firstOwnedBy(t, ab, "a"), firstOwnedBy(t, ab, "b")
	tests := []struct {
		name string
		obj  *metav1.PartialObjectMetadata
		want class
	}{
		{"ours and the ring agrees", object(mine, "a"), classOwned},
		{"ours but the ring names b", object(theirs, "a"), classHandOver},
		{"b's, b is live", object(mine, "b"), classOthers},
		{"new, the ring names us", object(mine, ""), classClaim},
		{"new, the ring names b", object(theirs, ""), classUnassigned},
		{"bogus label, the ring names us", object(mine, "nobody"), classClaim},
		{"bogus label, the ring names b", object(theirs, "nobody"), classUnassigned},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, s.classify(tc.obj)); diff != "" {
				t.Errorf("class (-want +got):\n%s", diff)
			}
		})
	}
}

// TestShardClaimsOnlyOnceSettled: a member that just joined claims nothing until it held its Lease
// for the join delay (replicas starting together see each other first), and nobody hands objects
// over to it before then.
func TestShardClaimsOnlyOnceSettled(t *testing.T) {
	members, clk, c := newMembers(t, "a", "b")
	renewAll(t, members["a"], members["b"])
	s := newShard(Config{Ring: "welcome", Member: "a", Namespace: "ops"}, members["a"], c)
	s.observe(t.Context())
	mine, theirs := firstOwnedBy(t, []string{"a", "b"}, "a"), firstOwnedBy(t, []string{"a", "b"}, "b")
	type classes struct{ New, OursForB class }
	got := classes{s.classify(object(mine, "")), s.classify(object(theirs, "a"))}
	if diff := cmp.Diff(classes{classUnassigned, classOwned}, got); diff != "" {
		t.Errorf("just joined (-want +got):\n%s", diff)
	}
	clk.Step(s.mcfg.joinDelay)
	renewAll(t, members["a"], members["b"])
	s.observe(t.Context())
	got = classes{s.classify(object(mine, "")), s.classify(object(theirs, "a"))}
	if diff := cmp.Diff(classes{classClaim, classHandOver}, got); diff != "" {
		t.Errorf("after the join delay (-want +got):\n%s", diff)
	}
}

// TestShardTakesOverOnlyFencedOrGone: the objects of a member whose Lease expired are left alone
// until a survivor fenced it; the survivor that fenced it claims at the same look, not the next one.
func TestShardTakesOverOnlyFencedOrGone(t *testing.T) {
	s, members := newTestShard(t, "a", "b")
	mine := firstOwnedBy(t, []string{"a"}, "a")
	if got := s.classify(object(mine, "b")); got != classOthers {
		t.Fatalf("b live: class %v, want classOthers", got)
	}
	clk := s.mcfg.clock.(interface{ Step(d time.Duration) })
	clk.Step(lease)
	renewAll(t, members["a"])
	s.observe(t.Context()) // b expired: this observe also fences it, and a claims at once
	if got := s.classify(object(mine, "b")); got != classClaim {
		t.Errorf("b fenced: class %v, want classClaim", got)
	}
}

// TestShardGuard: the guarded client refuses every write once the member may no longer write, and
// Begin admits no reconcile; reads pass.
func TestShardGuard(t *testing.T) {
	s, _ := newTestShard(t, "a")
	c := s.Client(fake.NewClientBuilder().WithObjects(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"}}).Build())
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "y", Namespace: "ns"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatalf("create while the lease is fresh: %v", err)
	}
	if end, ok := s.Begin(); !ok {
		t.Fatal("Begin refused while the lease is fresh")
	} else {
		end()
	}
	clk := s.mcfg.clock.(interface{ Step(d time.Duration) })
	clk.Step(renew)
	writes := map[string]error{
		"create": c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "z", Namespace: "ns"}}),
		"update": c.Update(ctx, cm),
		"patch":  c.Patch(ctx, cm, client.MergeFrom(cm.DeepCopy())),
		"delete": c.Delete(ctx, cm),
		"status": c.Status().Update(ctx, cm),
	}
	for verb, err := range writes {
		if !errors.Is(err, ErrCannotWrite) {
			t.Errorf("%s after the renew deadline: %v, want ErrCannotWrite", verb, err)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
		t.Errorf("get after the renew deadline: %v", err)
	}
	if _, ok := s.Begin(); ok {
		t.Error("Begin admitted a reconcile after the renew deadline")
	}
}

func TestLabelPatch(t *testing.T) {
	tests := []struct {
		name, member, from, rv, want string
	}{
		{"claim", "a", "", "7", `{"metadata":{"annotations":{"sharding.convergo.dev/moved-from":null},"labels":{"shard.convergo.dev/w":"a"},"resourceVersion":"7"}}`},
		{"move", "b", "a", "8", `{"metadata":{"annotations":{"sharding.convergo.dev/moved-from":"a"},"labels":{"shard.convergo.dev/w":"b"},"resourceVersion":"8"}}`},
		{"child", "b", "", "", `{"metadata":{"annotations":{"sharding.convergo.dev/moved-from":null},"labels":{"shard.convergo.dev/w":"b"}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := labelPatch(Label("w"), tc.member, tc.from, tc.rv)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		cfg   Config
		valid bool
	}{
		{Config{Ring: "welcome", Member: "welcome-0", Namespace: "ops"}, true},
		{Config{Ring: "welcome", Member: "", Namespace: "ops"}, false},
		{Config{Ring: "Bad Ring", Member: "a", Namespace: "ops"}, false},
		{Config{Ring: "welcome", Member: "has/slash", Namespace: "ops"}, false},
	}
	for _, tc := range tests {
		if err := tc.cfg.Validate(); (err == nil) != tc.valid {
			t.Errorf("Validate(%+v) = %v, want valid %v", tc.cfg, err, tc.valid)
		}
	}
}

// TestScopeCache: the sharded kinds select the member's label, combined with a selector already set;
// the Lease informer selects the ring in its namespace.
func TestScopeCache(t *testing.T) {
	opts := cache.Options{ByObject: map[client.Object]cache.ByObject{}}
	tracked, _ := labels.Parse("convergo.dev/owner-uid")
	opts.ByObject[&corev1.ConfigMap{}] = cache.ByObject{Label: tracked}
	Config{Ring: "w", Member: "a", Namespace: "ops"}.ScopeCache(&opts, &corev1.ConfigMap{}, &corev1.Service{})
	got := map[string]string{}
	for k, v := range opts.ByObject {
		ns := ""
		for n := range v.Namespaces {
			ns = n
		}
		got[reflect.TypeOf(k).Elem().Name()] = v.Label.String() + " " + ns
	}
	want := map[string]string{
		"ConfigMap": "convergo.dev/owner-uid,shard.convergo.dev/w=a ",
		"Service":   "shard.convergo.dev/w=a ",
		"Lease":     "sharding.convergo.dev/ring=w ops",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cache selectors (-want +got):\n%s", diff)
	}
}

// TestShardGaugesFollowChanges: once objects change (a claim relabels one), the owned and unassigned
// gauges are counted again without waiting for the next resync.
func TestShardGaugesFollowChanges(t *testing.T) {
	s, _ := newTestShard(t, "a", "b")
	ab := []string{"a", "b"}
	mine, theirs := firstOwnedBy(t, ab, "a"), firstOwnedBy(t, ab, "b")
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	s.mu.Lock()
	s.store = store
	s.mu.Unlock()
	gauges := func() [2]float64 {
		return [2]float64{testutil.ToFloat64(metricOwned.WithLabelValues("welcome", "a")), testutil.ToFloat64(metricUnassigned.WithLabelValues("welcome", "a"))}
	}
	go s.countGauges(t.Context())
	for _, step := range []struct {
		objs []*metav1.PartialObjectMetadata
		want [2]float64 // owned, unassigned
	}{
		{objs: []*metav1.PartialObjectMetadata{object(mine, ""), object(theirs, "")}, want: [2]float64{0, 2}},
		{objs: []*metav1.PartialObjectMetadata{object(mine, "a"), object(theirs, "b")}, want: [2]float64{1, 0}}, // claimed
	} {
		for _, o := range step.objs {
			if err := store.Update(o); err != nil {
				t.Fatal(err)
			}
		}
		s.recount.Store(true) // what the informer's handler does on each event
		deadline := time.Now().Add(time.Minute)
		for gauges() != step.want && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if diff := cmp.Diff(step.want, gauges()); diff != "" {
			t.Errorf("gauges [owned, unassigned] (-want +got):\n%s", diff)
		}
	}
}

// TestShardDrainLetsAdmittedReconcilesWrite: once the shard stops, it admits no new reconcile, but the
// one it admitted writes on until it ends; then every write is refused, with the cause named.
func TestShardDrainLetsAdmittedReconcilesWrite(t *testing.T) {
	s, _ := newTestShard(t, "a")
	c := s.Client(fake.NewClientBuilder().Build())
	end, ok := s.Begin()
	if !ok {
		t.Fatal("Begin refused while the lease is fresh")
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		s.drain()
	}()
	for { // until the drain has begun
		s.mu.Lock()
		stopping := s.stopping
		s.mu.Unlock()
		if stopping {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if _, ok := s.Begin(); ok {
		t.Error("a stopping shard admitted a new reconcile")
	}
	if err := c.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mid-write", Namespace: "ns"}}); err != nil {
		t.Errorf("write of the admitted reconcile while the shard drains: %v", err)
	}
	end()
	<-drained
	err := c.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after", Namespace: "ns"}})
	if !errors.Is(err, ErrCannotWrite) || !strings.Contains(err.Error(), "released its Lease") {
		t.Errorf("write after the drain: %v, want ErrCannotWrite naming the released Lease", err)
	}
}
