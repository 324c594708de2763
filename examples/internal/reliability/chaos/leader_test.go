//go:build chaos

package chaos

import (
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/examples/internal/reliability"
	"github.com/convergo-dev/convergo/testing/harness"
)

// leaseDuration is the managers' leader lease (renew deadline 3s, retry period 1s).
const leaseDuration = 4 * time.Second

// TestLeaderElection runs two managers of each operator with leader election. While N objects
// converge, only the leader writes: the follower's only writes are attempts on the Lease. Then N
// more objects are created, half of the first ones changed and a quarter deleted, and the leader is
// killed at once (connections cut, lease not released, as in a crash): the follower takes over once
// the lease expires and finishes the work. No child is created twice, deletions keep their order,
// and the usual audit holds.
func TestLeaderElection(t *testing.T) {
	for _, op := range reliability.Operators {
		t.Run(op.Name, func(t *testing.T) {
			env := harness.Default()
			ns := env.Namespace(t)
			rec := reliability.RecordOperator(t, env.Config, env.Scheme, op, ns)
			id := op.Name + "-leader"
			start := func(name string) *reliability.Manager {
				return reliability.StartManager(t, env.Config, env.Scheme, op.Setup, reliability.WithName(name),
					reliability.WithNamespace(ns), reliability.WithLeaderElection(ns, id, leaseDuration))
			}
			managers := []*reliability.Manager{start(op.Name + "-a"), start(op.Name + "-b")}
			reliability.DeleteAtCleanup(t, env.Client, op, ns)
			leader, follower := waitForLeader(t, managers)
			t.Logf("%s leads, %s follows", leader.Name, follower.Name)

			first := reliability.Names(op.Name, objects)
			reliability.CreateAll(t, env.Client, op, ns, first)
			reliability.SetForeignCondition(t, env.Client, op, ns, first)
			exp := reliability.Expectation{Operator: op, Namespace: ns, Kept: []string{reliability.ForeignCondition}}
			reliability.WaitConverged(t, env.Client, exp, convergeTimeout)
			followerWrites := onlyLeaseWrites(t, follower)

			second := reliability.Names(op.Name+"-more", objects)
			reliability.CreateAll(t, env.Client, op, ns, second)
			reliability.SetForeignCondition(t, env.Client, op, ns, second)
			reliability.ChangeAll(t, env.Client, op, ns, first[:objects/2])
			exp.Deleted = first[objects-objects/4:]
			reliability.DeleteAll(t, env.Client, op, ns, exp.Deleted)
			before := lease(t, env, ns, id)
			killed := time.Now()
			leader.Kill()

			select {
			case <-follower.Elected():
			case <-time.After(4*leaseDuration + time.Minute):
				t.Fatalf("%s did not take over within %s after the leader was killed; lease: %+v", follower.Name, 4*leaseDuration+time.Minute, lease(t, env, ns, id).Spec)
			}
			took := time.Since(killed)
			after := lease(t, env, ns, id)
			if after.Spec.LeaseTransitions == nil || before.Spec.LeaseTransitions == nil || *after.Spec.LeaseTransitions != *before.Spec.LeaseTransitions+1 {
				t.Errorf("lease transitions %v -> %v, want one more", before.Spec.LeaseTransitions, after.Spec.LeaseTransitions)
			}
			if holder := ptrString(after.Spec.HolderIdentity); holder == ptrString(before.Spec.HolderIdentity) {
				t.Errorf("lease holder still %q after the takeover", holder)
			}

			reliability.WaitConverged(t, env.Client, exp, convergeTimeout)
			rec.WaitDeleted(t, op.Kind, exp.Deleted, convergeTimeout)
			reliability.CheckHistory(t, rec, op)
			gap := "unknown"
			if before.Spec.RenewTime != nil && after.Spec.AcquireTime != nil {
				gap = after.Spec.AcquireTime.Sub(before.Spec.RenewTime.Time).Round(100 * time.Millisecond).String()
			}
			t.Logf("FIGURES leader election %s: follower wrote only %d lease requests; leader killed mid-work, takeover %s after the kill (lease %s; last renewal to new acquisition %s); %d objects converged by the new leader, no child created twice",
				op.Name, followerWrites, took.Round(100*time.Millisecond), leaseDuration, gap, 2*objects-len(exp.Deleted))
		})
	}
}

// waitForLeader waits until one of the managers is elected and returns it and the other.
func waitForLeader(t *testing.T, ms []*reliability.Manager) (leader, follower *reliability.Manager) {
	t.Helper()
	select {
	case <-ms[0].Elected():
		return ms[0], ms[1]
	case <-ms[1].Elected():
		return ms[1], ms[0]
	case <-time.After(convergeTimeout):
		t.Fatalf("no manager was elected within %s", convergeTimeout)
		return nil, nil
	}
}

// onlyLeaseWrites fails the test if the follower made a write other than on its Lease and returns
// the number of its lease writes.
func onlyLeaseWrites(t *testing.T, follower *reliability.Manager) int {
	t.Helper()
	writes := follower.Requests.Snapshot().Filter(harness.Request.IsWrite)
	others := writes.Filter(func(r harness.Request) bool {
		return !(r.APIGroup == coordinationv1.GroupName && r.Resource == "leases")
	})
	if len(others) > 0 {
		t.Errorf("the follower %s wrote something other than its Lease:\n%s", follower.Name, others)
	}
	return len(writes) - len(others)
}

func lease(t *testing.T, env *harness.Env, ns, name string) *coordinationv1.Lease {
	t.Helper()
	var l coordinationv1.Lease
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &l); err != nil {
		t.Fatalf("get lease: %v", err)
	}
	return &l
}

func ptrString(s *string) string {
	if s == nil {
		return fmt.Sprint(nil)
	}
	return *s
}
