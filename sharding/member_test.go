package sharding

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

const (
	lease = 4 * time.Second
	renew = 3 * time.Second
	retry = time.Second
)

func newMembers(t *testing.T, names ...string) (map[string]*Member, *clocktesting.FakeClock, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := coordinationv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC))
	out := map[string]*Member{}
	for _, n := range names {
		out[n] = NewMember(c, "welcome", n, "ops", WithLeaseTimings(lease, renew, retry), WithClock(clk))
	}
	return out, clk, c
}

type view struct{ Live, Expired []string }

func observe(t *testing.T, m *Member) view {
	t.Helper()
	live, expired, err := m.Observe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return view{live, expired}
}

func renewAll(t *testing.T, ms ...*Member) {
	t.Helper()
	for _, m := range ms {
		if err := m.Renew(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMemberLiveness: a member is live while the observer sees its Lease renewed within the lease
// duration of the observer's clock, expired after, live again once it renews; a released Lease
// counts neither as live nor as expired.
func TestMemberLiveness(t *testing.T) {
	ms, clk, _ := newMembers(t, "a", "b", "c")
	a, b, c := ms["a"], ms["b"], ms["c"]
	renewAll(t, a, b, c)
	sorted := cmpopts.SortSlices(func(x, y string) bool { return x < y })
	steps := []struct {
		name string
		do   func()
		want view
	}{
		{"all renewed", func() {}, view{Live: []string{"a", "b", "c"}}},
		{"c stops renewing: still live within the lease duration", func() { clk.Step(lease - retry); renewAll(t, a, b) }, view{Live: []string{"a", "b", "c"}}},
		{"c expired", func() { clk.Step(retry); renewAll(t, a, b) }, view{Live: []string{"a", "b"}, Expired: []string{"c"}}},
		{"c renews: live again", func() { renewAll(t, c) }, view{Live: []string{"a", "b", "c"}}},
		{"c released its lease: gone at once", func() {
			if err := c.release(); err != nil {
				t.Fatal(err)
			}
		}, view{Live: []string{"a", "b"}}},
	}
	for _, s := range steps {
		s.do()
		if diff := cmp.Diff(s.want, observe(t, b), sorted, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: what b sees (-want +got):\n%s", s.name, diff)
		}
	}
}

// TestMemberStopsWritingBeforeAnyoneMayTakeOver: a member whose renewals fail loses CanWrite before
// any observer sees its Lease expire, whenever the observer looks.
func TestMemberStopsWritingBeforeAnyoneMayTakeOver(t *testing.T) {
	for _, observeAfter := range []time.Duration{0, 500 * time.Millisecond, retry} {
		ms, clk, _ := newMembers(t, "zombie", "b")
		zombie, b := ms["zombie"], ms["b"]
		renewAll(t, zombie, b)
		clk.Step(observeAfter)
		observe(t, b) // b sees the last renewal at this time
		stoppedAt, expiredAt := time.Duration(-1), time.Duration(-1)
		for elapsed := observeAfter; elapsed <= 2*lease; elapsed += 100 * time.Millisecond {
			if stoppedAt < 0 && !zombie.CanWrite() {
				stoppedAt = elapsed
			}
			if expiredAt < 0 && len(observe(t, b).Expired) > 0 {
				expiredAt = elapsed
			}
			clk.Step(100 * time.Millisecond)
		}
		if stoppedAt < 0 || expiredAt < 0 || stoppedAt >= expiredAt {
			t.Errorf("observed %v after the last renewal: the zombie stopped writing at %v, b saw it expire at %v; want it to stop first", observeAfter, stoppedAt, expiredAt)
		}
	}
}

// TestMemberCanWrite: only within the renew deadline of a successful renewal, and never after release.
func TestMemberCanWrite(t *testing.T) {
	ms, clk, _ := newMembers(t, "a")
	a := ms["a"]
	got := []bool{a.CanWrite()}
	renewAll(t, a)
	got = append(got, a.CanWrite())
	clk.Step(renew - time.Millisecond)
	got = append(got, a.CanWrite())
	clk.Step(time.Millisecond)
	got = append(got, a.CanWrite())
	renewAll(t, a)
	got = append(got, a.CanWrite())
	if err := a.release(); err != nil {
		t.Fatal(err)
	}
	got = append(got, a.CanWrite())
	if diff := cmp.Diff([]bool{false, true, true, false, true, false}, got); diff != "" {
		t.Errorf("CanWrite before renewing, after, just before the deadline, at it, renewed, released (-want +got):\n%s", diff)
	}
}

// TestMemberFence: of two survivors, the one with the current observation fences the expired member;
// the other's fence finds the Lease changed. The fenced member takes its Lease back when it renews, as
// a new incarnation.
func TestMemberFence(t *testing.T) {
	ms, clk, c := newMembers(t, "a", "b", "c")
	a, b, cm := ms["a"], ms["b"], ms["c"]
	renewAll(t, a, b, cm)
	observe(t, a)
	observe(t, b)
	clk.Step(lease)
	renewAll(t, a, b)
	if got := observe(t, b).Expired; !cmp.Equal(got, []string{"c"}) {
		t.Fatalf("b sees expired %v, want [c]", got)
	}
	observe(t, a)
	won, err := b.Fence(t.Context(), "c")
	if err != nil || !won {
		t.Fatalf("b.Fence(c) = %v, %v; want fenced", won, err)
	}
	won, err = a.Fence(t.Context(), "c")
	if err != nil || won {
		t.Fatalf("a.Fence(c) after b = %v, %v; want false", won, err)
	}
	got := &coordinationv1.Lease{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ops", Name: "welcome-c"}, got); err != nil {
		t.Fatal(err)
	}
	if by := FencedBy(ptr.Deref(got.Spec.HolderIdentity, "")); by != "b" {
		t.Errorf("lease holder %q, want fenced by b", ptr.Deref(got.Spec.HolderIdentity, ""))
	}
	if diff := cmp.Diff(view{Live: []string{"a", "b"}}, observe(t, a), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("after the fence, a sees (-want +got):\n%s", diff)
	}
	renewAll(t, cm)
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ops", Name: "welcome-c"}, got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]any{"c", int32(1)}, []any{ptr.Deref(got.Spec.HolderIdentity, ""), ptr.Deref(got.Spec.LeaseTransitions, 0)}); diff != "" {
		t.Errorf("after c renews: holder and transitions (-want +got):\n%s", diff)
	}
	if _, err := a.Fence(t.Context(), "never-seen"); err == nil {
		t.Error("Fence of a member never observed: want an error")
	}
}

// TestWithLeaseTimings: each timing given replaces its default; one that is not positive (a flag left
// at zero) keeps it.
func TestWithLeaseTimings(t *testing.T) {
	cases := map[string]struct {
		lease, renew, retry time.Duration
		want                [3]time.Duration
	}{
		"all given":  {lease: 6 * time.Second, renew: 4 * time.Second, retry: time.Second, want: [3]time.Duration{6 * time.Second, 4 * time.Second, time.Second}},
		"none given": {want: [3]time.Duration{DefaultLeaseDuration, DefaultRenewDeadline, DefaultRetryPeriod}},
		"one given":  {renew: 5 * time.Second, want: [3]time.Duration{DefaultLeaseDuration, 5 * time.Second, DefaultRetryPeriod}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := NewMember(nil, "ring", "a", "ns", WithLeaseTimings(tc.lease, tc.renew, tc.retry))
			if diff := cmp.Diff(tc.want, [3]time.Duration{m.cfg.leaseDuration, m.cfg.renewDeadline, m.cfg.retryPeriod}); diff != "" {
				t.Errorf("timings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMemberWritesDespiteAStaleCache: a member whose client reads a Lease older than its own last
// write (a cache that has not caught up) still renews and releases it, without a conflict: the
// release is what lets the others take over at once.
func TestMemberWritesDespiteAStaleCache(t *testing.T) {
	tests := []struct {
		name string
		do   func(context.Context, *Member) error
	}{
		{"renew", func(ctx context.Context, m *Member) error { return m.Renew(ctx) }},
		{"release", func(_ context.Context, m *Member) error { return m.release() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			if err := coordinationv1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			var stale *coordinationv1.Lease // what the cache shows: the Lease before the last write
			c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if l, ok := obj.(*coordinationv1.Lease); ok && stale != nil {
						stale.DeepCopyInto(l)
						return nil
					}
					return c.Get(ctx, key, obj, opts...)
				},
			}).Build()
			m := NewMember(c, "welcome", "a", "ops", WithLeaseTimings(lease, renew, retry))
			renewAll(t, m)
			snapshot := &coordinationv1.Lease{}
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ops", Name: "welcome-a"}, snapshot); err != nil {
				t.Fatal(err)
			}
			stale = snapshot
			renewAll(t, m) // the cache does not show this renewal
			if err := tc.do(t.Context(), m); err != nil {
				t.Fatalf("%s with a stale cache: %v", tc.name, err)
			}
		})
	}
}
