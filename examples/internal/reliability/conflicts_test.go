//go:build integration

package reliability_test

import (
	"context"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/convergo-dev/convergo/examples/internal/reliability"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/fakes"
	"github.com/convergo-dev/convergo/testing/harness"
)

// conflictRate is the fraction of the operator's writes answered 409 Conflict.
const conflictRate = 0.3

// TestConflicts runs each operator with 30% of its writes (creates, server-side applies, patches,
// status patches, finalizer patches, deletes, events) answered 409 Conflict by an injecting
// round-tripper with a fixed seed, while N objects converge, are changed, and some are deleted. Another
// writer adds a condition to every object meanwhile. At the end every object is Ready for its current
// generation, the deleted ones are gone, no child is orphaned, no finalizer leaked, and the other
// writer's condition survived.
func TestConflicts(t *testing.T) {
	const n = 10
	for _, op := range reliability.Operators {
		t.Run(op.Name, func(t *testing.T) {
			env := harness.Default()
			ns := env.Namespace(t)
			inj := fakes.NewInjector(fakes.WithInjectRate(conflictRate), fakes.WithInjectSeed(20261122), fakes.WithInjectDeletes())
			reliability.StartManager(t, env.Config, env.Scheme, op.Setup,
				reliability.WithName(op.Name), reliability.WithNamespace(ns), reliability.WithConfig(inj.Wrap))
			reliability.DeleteAtCleanup(t, env.Client, op, ns)
			rec := reliability.RecordOperator(t, env.Config, env.Scheme, op, ns)

			names := reliability.Names(op.Name, n)
			reliability.CreateAll(t, env.Client, op, ns, names)
			reliability.SetForeignCondition(t, env.Client, op, ns, names)
			exp := reliability.Expectation{Operator: op, Namespace: ns, Kept: []string{reliability.ForeignCondition}}
			rep := reliability.WaitConverged(t, env.Client, exp, convergeTimeout)
			t.Logf("created %d: %s", n, rep)

			reliability.ChangeAll(t, env.Client, op, ns, names[:n/2])
			exp.Deleted = names[n-n/4:]
			reliability.DeleteAll(t, env.Client, op, ns, exp.Deleted)
			rep = reliability.WaitConverged(t, env.Client, exp, convergeTimeout)
			t.Logf("changed %d, deleted %d: %s", n/2, len(exp.Deleted), rep)

			rec.WaitDeleted(t, op.Kind, exp.Deleted, convergeTimeout)
			reliability.CheckHistory(t, rec, op)
			stats := inj.Stats()
			if stats.Conflicts == 0 {
				t.Fatalf("no conflict was injected (%d eligible writes): the test proves nothing", stats.Writes)
			}
			t.Logf("FIGURES conflicts %s: %d of %d writes answered 409 (%v); objects lost: 0", op.Name, stats.Conflicts, stats.Writes, stats.ByResource)
		})
	}
}

// TestStatusConflictAfterLostResponse replays, with the library's status.Patcher against the API
// server, what a killed API server does to an operator: a status write of the operator reaches etcd
// but its answer is lost, so the operator's cache never showed it; the next reconcile starts from the
// older copy, decides Ready, and its patch meets a conflict. Whatever the Patcher merges, the object
// must not end up Ready=True and Reconciling=True at once (kstatus), which no later event would repair.
func TestStatusConflictAfterLostResponse(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	cases := map[string]struct {
		lost func(obj status.Object) // the write whose answer was lost
		mark func(obj status.Object) // what the next reconcile decides from the older copy
	}{
		"lost Reconciling, then Ready": {
			lost: func(obj status.Object) {
				status.MarkReconciling(obj, "WaitingForDependencies", "deployment: 0/1 replicas available")
			},
			mark: func(obj status.Object) { status.MarkReady(obj, "Reconciled", "all 2 children ready") },
		},
		"lost Stalled, then Ready": {
			lost: func(obj status.Object) { status.MarkStalled(obj, "InvalidSpec", "bad") },
			mark: func(obj status.Object) { status.MarkReady(obj, "Reconciled", "all 2 children ready") },
		},
		"lost Reconciling, then Stalled": {
			lost: func(obj status.Object) { status.MarkReconciling(obj, "Progressing", "waiting") },
			mark: func(obj status.Object) { status.MarkStalled(obj, "InvalidSpec", "bad") },
		},
	}
	i := 0
	for name, tc := range cases {
		i++
		t.Run(name, func(t *testing.T) {
			op := reliability.Memcached
			obj := op.New(ns, fmt.Sprintf("lost-%d", i), i)
			if err := env.Client.Create(t.Context(), obj); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := env.Client.Delete(context.WithoutCancel(t.Context()), obj); err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("delete %s: %v", obj.GetName(), err)
				}
			})
			before := obj.DeepCopyObject().(status.Object) // the operator's cached copy

			lost := obj.DeepCopyObject().(status.Object)
			tc.lost(lost)
			if err := env.Client.Status().Update(t.Context(), lost); err != nil {
				t.Fatal(err)
			}

			cur := before.DeepCopyObject().(status.Object)
			tc.mark(cur)
			p := status.NewPatcher(env.Client, status.WithAPIReader(env.Client))
			if _, err := p.Patch(t.Context(), cur, before); err != nil {
				t.Fatalf("patch: %v", err)
			}
			got, err := reliability.Get(t.Context(), env.Client, op, ns, obj.GetName())
			if err != nil {
				t.Fatal(err)
			}
			var trues []string
			for _, c := range []string{status.Ready, status.Reconciling, status.Stalled} {
				if meta.IsStatusConditionTrue(got.GetConditions(), c) {
					trues = append(trues, c)
				}
			}
			if len(trues) > 1 {
				t.Errorf("after the conflict the object has %v all True (kstatus allows one); conditions:\n%s", trues, harness.ObjectYAML(got))
			}
		})
	}
}
