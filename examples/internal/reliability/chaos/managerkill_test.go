//go:build chaos

package chaos

import (
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/examples/internal/reliability"
	"github.com/convergo-dev/convergo/testing/harness"
)

// holdFinalizer keeps a Deployment from going away once deleted, so that a test can stop a deletion
// in the middle of the graph.
const holdFinalizer = "reliability.convergo.dev/hold"

// restartWindow is how long the restarted manager runs before the held Deployments are released:
// long enough for it to reconcile every object, so that a premature deletion of the next layer
// (which would be seen in the recorded order) has every chance to happen.
const restartWindow = 5 * time.Second

// TestManagerKilledMidDeletion deletes N objects of each operator and kills the manager (its
// connections cut at once, no graceful shutdown) when every deletion is half done: the Deployments
// are terminating, held by a finalizer of the test, every child of an earlier layer is gone (the
// Memcached's Service) and every child of a later layer is still there (the Welcome's ConfigMap and
// Service). A new manager then resumes: nothing of a later layer is deleted before the held
// Deployments are gone, and once they are released every object is gone, in order, with no orphan
// and no leaked finalizer.
func TestManagerKilledMidDeletion(t *testing.T) {
	env := harness.Default()
	subjects := startSubjects(t, env)
	for _, s := range subjects {
		reliability.CreateAll(t, env.Client, s.op, s.ns, s.names)
		reliability.SetForeignCondition(t, env.Client, s.op, s.ns, s.names)
	}
	for _, s := range subjects {
		reliability.WaitConverged(t, env.Client, s.expectation(nil), convergeTimeout)
		holdDeployments(t, env, s.ns, true)
		reliability.DeleteAll(t, env.Client, s.op, s.ns, s.names)
	}
	for _, s := range subjects {
		harness.Eventually(t, convergeTimeout, func() (bool, string) {
			return midDeletion(t, env, s)
		})
		s.mgr.Kill()
		t.Logf("%s: manager killed with every deletion half done", s.op.Name)
	}

	for _, s := range subjects {
		s.mgr = reliability.StartManager(t, env.Config, env.Scheme, s.op.Setup,
			reliability.WithName(s.op.Name+"-restarted"), reliability.WithNamespace(s.ns))
		reliability.DeleteAtCleanup(t, env.Client, s.op, s.ns) // runs before the new manager stops
	}
	time.Sleep(restartWindow)
	for _, s := range subjects {
		if ok, state := midDeletion(t, env, s); !ok {
			t.Errorf("%s: the restarted manager moved on before the held Deployments were gone: %s", s.op.Name, state)
		}
		holdDeployments(t, env, s.ns, false)
	}
	for _, s := range subjects {
		rep := reliability.WaitConverged(t, env.Client, s.expectation(s.names), convergeTimeout)
		s.rec.WaitDeleted(t, s.op.Kind, s.names, convergeTimeout)
		reliability.CheckHistory(t, s.rec, s.op)
		t.Logf("FIGURES manager killed mid-deletion: %s: %d objects deleted across the kill, in order: %s; objects lost: 0, orphans: 0",
			s.op.Name, len(s.names), rep)
	}
}

// midDeletion reports whether every object of s is half deleted: deletion started, the children that
// must go before the Deployments gone, the Deployments terminating, the children that wait for them
// untouched (children independent of the Deployments may be in either state).
func midDeletion(t *testing.T, env *harness.Env, s *subject) (bool, string) {
	t.Helper()
	var problems []string
	for _, name := range s.names {
		obj, err := reliability.Get(t.Context(), env.Client, s.op, s.ns, name)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if obj.GetDeletionTimestamp() == nil {
			problems = append(problems, name+": deletion not started")
		}
	}
	var held reliability.ChildKind // the held Deployments
	for _, kind := range s.op.Children {
		if kind.Kind == "Deployment" {
			held = kind
		}
	}
	for _, kind := range s.op.Children {
		list := kind.NewList()
		if err := env.Client.List(t.Context(), list, client.InNamespace(s.ns)); err != nil {
			return false, err.Error()
		}
		n, terminating := 0, 0
		_ = forEach(list, func(o client.Object) {
			if o.GetLabels()["app.kubernetes.io/managed-by"] != s.op.Controller {
				return
			}
			n++
			if o.GetDeletionTimestamp() != nil {
				terminating++
			}
		})
		switch {
		case slices.Contains(held.After, kind.Kind):
			if n != 0 {
				problems = append(problems, fmt.Sprintf("%d %ss left", n, kind.Kind))
			}
		case kind.Kind == "Deployment":
			if terminating != len(s.names) {
				problems = append(problems, fmt.Sprintf("%d of %d Deployments terminating", terminating, len(s.names)))
			}
		case slices.Contains(kind.After, "Deployment"):
			if n != len(s.names) || terminating != 0 {
				problems = append(problems, fmt.Sprintf("%d %ss (%d terminating), want all %d untouched", n, kind.Kind, terminating, len(s.names)))
			}
		}
	}
	return len(problems) == 0, fmt.Sprint(problems)
}

// holdDeployments adds (hold) or removes the test's finalizer on every Deployment in ns.
func holdDeployments(t *testing.T, env *harness.Env, ns string, hold bool) {
	t.Helper()
	var list appsv1.DeploymentList
	if err := env.Client.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, d := range list.Items {
		err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			var live appsv1.Deployment
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(&d), &live); err != nil {
				return err
			}
			has := slices.Contains(live.Finalizers, holdFinalizer)
			switch {
			case hold && !has:
				live.Finalizers = append(live.Finalizers, holdFinalizer)
			case !hold && has:
				live.Finalizers = slices.DeleteFunc(live.Finalizers, func(f string) bool { return f == holdFinalizer })
			default:
				return nil
			}
			return env.Client.Update(t.Context(), &live)
		})
		if err != nil {
			t.Fatalf("hold=%v Deployment %s: %v", hold, d.Name, err)
		}
	}
}
