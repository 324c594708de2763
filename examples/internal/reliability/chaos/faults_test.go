//go:build chaos

package chaos

import (
	"testing"
	"time"

	"github.com/convergo-dev/convergo/examples/internal/reliability"
	"github.com/convergo-dev/convergo/testing/harness"
)

// etcdPause is how long etcd stays frozen.
const etcdPause = 10 * time.Second

// TestAPIServerKilled kills kube-apiserver with SIGKILL right after N objects of each operator are
// created (mid-convergence) and starts it again on the same etcd; then again right after half of
// them are changed and a quarter deleted (mid-update, mid-deletion).
func TestAPIServerKilled(t *testing.T) {
	env := harness.Default()
	surviveTwice(t, env, "kube-apiserver SIGKILL and restart", func(t *testing.T) {
		if err := env.Cluster().KillAPIServer(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second) // the operators notice: requests fail, watches break
		if err := env.Cluster().StartAPIServer(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestEtcdPaused freezes etcd (SIGSTOP) for 10 seconds right after N objects of each operator are
// created, and again right after half of them are changed and a quarter deleted.
func TestEtcdPaused(t *testing.T) {
	env := harness.Default()
	surviveTwice(t, env, "etcd paused 10s", func(t *testing.T) {
		if err := env.Cluster().PauseEtcdFor(t.Context(), etcdPause); err != nil {
			t.Fatal(err)
		}
	})
}

// surviveTwice runs both operators through creation and then change and deletion, injecting fault
// right after each step, and audits the result after each.
func surviveTwice(t *testing.T, env *harness.Env, what string, fault func(t *testing.T)) {
	subjects := startSubjects(t, env)
	for _, s := range subjects {
		reliability.CreateAll(t, env.Client, s.op, s.ns, s.names)
		reliability.SetForeignCondition(t, env.Client, s.op, s.ns, s.names)
	}
	fault(t)
	for _, s := range subjects {
		rep := reliability.WaitConverged(t, env.Client, s.expectation(nil), convergeTimeout)
		t.Logf("%s after %s during creation: %s", s.op.Name, what, rep)
	}

	deleted := map[*subject][]string{}
	for _, s := range subjects {
		reliability.ChangeAll(t, env.Client, s.op, s.ns, s.names[:objects/2])
		deleted[s] = s.names[objects-objects/4:]
		reliability.DeleteAll(t, env.Client, s.op, s.ns, deleted[s])
	}
	fault(t)
	for _, s := range subjects {
		rep := reliability.WaitConverged(t, env.Client, s.expectation(deleted[s]), convergeTimeout)
		s.rec.WaitDeleted(t, s.op.Kind, deleted[s], convergeTimeout)
		reliability.CheckHistory(t, s.rec, s.op)
		t.Logf("FIGURES %s: 2 faults survived by %s with %d objects (%d changed, %d deleted): %s; objects lost: 0",
			what, s.op.Name, objects, objects/2, len(deleted[s]), rep)
	}
}
