//go:build integration

package sharding

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/testing/harness"
)

// Short timings for the real-clock tests: the Lease duration is whole seconds on the API server.
const (
	itLease = 2 * time.Second
	itRenew = 1500 * time.Millisecond
	itRetry = 250 * time.Millisecond
)

// TestIntegrationFenceHasOneWinner: four members on the real API server; one stops renewing without
// releasing its Lease (killed). Once every survivor sees it expired, all three fence it at the same
// time: exactly one wins, and the Lease names it.
func TestIntegrationFenceHasOneWinner(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	for round := range 5 {
		ring := fmt.Sprintf("r%d", round)
		newMember := func(name string) *Member {
			return NewMember(env.Client, ring, name, ns, WithLeaseTimings(itLease, itRenew, itRetry))
		}
		killed := newMember("killed")
		if err := killed.Renew(t.Context()); err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		survivors := []*Member{newMember("a"), newMember("b"), newMember("c")}
		for _, m := range survivors {
			wg.Go(func() { _ = m.Start(ctx) })
		}
		harness.Eventually(t, time.Minute, func() (bool, string) {
			var views []string
			all := true
			for _, m := range survivors {
				live, expired, err := m.Observe(t.Context())
				if err != nil {
					return false, err.Error()
				}
				views = append(views, fmt.Sprintf("%s sees live %v expired %v", m.Name(), live, expired))
				all = all && cmp.Equal(expired, []string{"killed"})
			}
			return all, fmt.Sprint(views)
		})
		wins := make([]bool, len(survivors))
		errs := make([]error, len(survivors))
		var race sync.WaitGroup
		for i, m := range survivors {
			race.Go(func() { wins[i], errs[i] = m.Fence(t.Context(), "killed") })
		}
		race.Wait()
		var winners []string
		for i, m := range survivors {
			if errs[i] != nil {
				t.Fatalf("round %d: %s.Fence: %v", round, m.Name(), errs[i])
			}
			if wins[i] {
				winners = append(winners, m.Name())
			}
		}
		lease := &coordinationv1.Lease{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: killed.LeaseName()}, lease); err != nil {
			t.Fatal(err)
		}
		if len(winners) != 1 || FencedBy(ptr.Deref(lease.Spec.HolderIdentity, "")) != winners[0] {
			t.Errorf("round %d: winners %v, lease holder %q; want exactly one winner, named by the lease", round, winners, ptr.Deref(lease.Spec.HolderIdentity, ""))
		}
		stop()
		wg.Wait()
	}
}

// TestIntegrationGracefulStopReleases: a member whose Start returns has released its Lease, so the
// others stop counting it at once (neither live nor expired), and it may no longer write.
func TestIntegrationGracefulStopReleases(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	a := NewMember(env.Client, "graceful", "a", ns, WithLeaseTimings(itLease, itRenew, itRetry))
	b := NewMember(env.Client, "graceful", "b", ns, WithLeaseTimings(itLease, itRenew, itRetry))
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- b.Start(ctx) }()
	aCtx, stopA := context.WithCancel(t.Context()) // a keeps renewing, however long the wait below takes
	aDone := make(chan error, 1)
	go func() { aDone <- a.Start(aCtx) }()
	t.Cleanup(func() { stopA(); <-aDone })
	harness.Eventually(t, time.Minute, func() (bool, string) {
		live, _, err := a.Observe(t.Context())
		return err == nil && b.CanWrite() && cmp.Equal(live, []string{"a", "b"}), fmt.Sprintf("a sees live %v (%v); b can write: %v", live, err, b.CanWrite())
	})
	stop()
	if err := <-done; err != nil {
		t.Fatalf("b.Start: %v", err)
	}
	live, expired, err := a.Observe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	type state struct {
		Live, Expired []string
		BCanWrite     bool
	}
	if diff := cmp.Diff(state{Live: []string{"a"}}, state{live, expired, b.CanWrite()}, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("after b stopped (-want +got):\n%s", diff)
	}
}
