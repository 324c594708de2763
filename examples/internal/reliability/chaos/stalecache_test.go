//go:build chaos

package chaos

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/builders"
	"github.com/convergo-dev/convergo/examples/internal/reliability"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestStaleCache makes each operator's manager lose every watch event for a while (bookmarks still
// pass, so its informers believe they are up to date): meanwhile objects are created, changed and
// deleted, and children are deleted or changed behind the operator's back. The manager's cache is now
// stale and it has not seen any of that work. It is then killed and a new manager started; the new one
// does all the work: new objects Ready, changes applied, deleted objects gone in order, children
// recreated or repaired, nothing orphaned.
func TestStaleCache(t *testing.T) {
	env := harness.Default()
	droppers := map[*reliability.Operator]*reliability.EventDropper{}
	var subjects []*subject
	for _, op := range reliability.Operators {
		d := &reliability.EventDropper{}
		droppers[op] = d
		s := &subject{op: op, ns: env.Namespace(t), names: reliability.Names(op.Name, objects)}
		s.rec = reliability.RecordOperator(t, env.Config, env.Scheme, op, s.ns)
		s.mgr = reliability.StartManager(t, env.Config, env.Scheme, op.Setup, reliability.WithName(op.Name),
			reliability.WithNamespace(s.ns), reliability.WithConfig(func(c *rest.Config) *rest.Config { return d.Wrap(c) }))
		reliability.DeleteAtCleanup(t, env.Client, op, s.ns)
		subjects = append(subjects, s)
	}
	half := objects / 2
	for _, s := range subjects {
		reliability.CreateAll(t, env.Client, s.op, s.ns, s.names[:half])
		reliability.SetForeignCondition(t, env.Client, s.op, s.ns, s.names[:half])
		reliability.WaitConverged(t, env.Client, s.expectation(nil), convergeTimeout)
	}

	deleted := map[*subject][]string{}
	for _, s := range subjects {
		droppers[s.op].SetDropping(true)
		reliability.CreateAll(t, env.Client, s.op, s.ns, s.names[half:])
		reliability.ChangeAll(t, env.Client, s.op, s.ns, s.names[:2])
		deleted[s] = s.names[half-1 : half]
		reliability.DeleteAll(t, env.Client, s.op, s.ns, deleted[s])
		// Behind the operator's back: a child deleted, another changed.
		svc := &corev1.Service{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: s.ns, Name: s.names[2]}, svc); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Delete(t.Context(), svc); err != nil {
			t.Fatal(err)
		}
		tamper(t, env, s.ns, s.names[3])
	}
	for _, s := range subjects {
		harness.Eventually(t, convergeTimeout, func() (bool, string) {
			return droppers[s.op].Dropped() > 0, "no watch event dropped yet"
		})
		s.mgr.Kill()
		t.Logf("%s: manager killed after %d watch events were dropped", s.op.Name, droppers[s.op].Dropped())
	}

	for _, s := range subjects {
		s.mgr = reliability.StartManager(t, env.Config, env.Scheme, s.op.Setup,
			reliability.WithName(s.op.Name+"-restarted"), reliability.WithNamespace(s.ns))
		reliability.DeleteAtCleanup(t, env.Client, s.op, s.ns) // runs before the new manager stops
	}
	for _, s := range subjects {
		exp := s.expectation(deleted[s])
		exp.Kept = nil // the objects created while events were dropped have no foreign condition
		rep := reliability.WaitConverged(t, env.Client, exp, convergeTimeout)
		for _, name := range s.names[:half-1] {
			obj, err := reliability.Get(t.Context(), env.Client, s.op, s.ns, name)
			if err != nil {
				t.Fatal(err)
			}
			if meta.FindStatusCondition(obj.GetConditions(), reliability.ForeignCondition) == nil {
				t.Errorf("%s %s lost condition %s across the stale cache and the restart", s.op.Name, name, reliability.ForeignCondition)
			}
		}
		var d appsv1.Deployment
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: s.ns, Name: s.names[3]}, &d); err != nil {
			t.Fatal(err)
		}
		if got := d.Labels[builders.PartOfLabel]; got == tampered {
			t.Errorf("%s: the Deployment changed behind the operator's back was not repaired (label %s=%q)", s.op.Name, builders.PartOfLabel, got)
		}
		s.rec.WaitDeleted(t, s.op.Kind, deleted[s], convergeTimeout)
		reliability.CheckHistory(t, s.rec, s.op, "Service/"+s.names[2])
		t.Logf("FIGURES stale cache %s: %d watch events dropped; %d created, 2 changed, %d deleted, 1 Service deleted behind its back while stale; after restart: %s; objects lost: 0",
			s.op.Name, droppers[s.op].Dropped(), objects-half, len(deleted[s]), rep)
	}
}

// tampered is the label value a test writes into a child behind the operator's back.
const tampered = "tampered-with"

// tamper changes the part-of label of the Deployment name in ns, a field the operator declares.
func tamper(t *testing.T, env *harness.Env, ns, name string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		var d appsv1.Deployment
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
			return err
		}
		d.Labels[builders.PartOfLabel] = tampered
		return env.Client.Update(t.Context(), &d)
	})
	if err != nil {
		t.Fatalf("tamper with Deployment %s: %v", name, err)
	}
}
