package optest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/testing/harness"
)

// Operator is an operator under test as this package observes it: the manager that runs it, the
// requests it sends and its reconciles. StartOperator makes one; a test that starts its manager
// another way fills in the fields itself.
type Operator struct {
	// Manager runs the operator's controllers. Its cache is what they read.
	Manager manager.Manager
	// Requests records the requests the manager sends: the manager's rest.Config is Requests.Wrap of
	// another.
	Requests *harness.RequestCounter
	// Reconciles records the reconciles of the operator's controllers: the manager's BaseContext
	// carries reconcile.ContextWithObserver(ctx, Reconciles.Observe).
	Reconciles *Reconciles
}

// StartOperator starts a manager for the test (env.StartManager, with setup and opts) whose requests a
// new RequestCounter records and whose Convergo controllers report their reconciles to a new
// Reconciles, through the manager's BaseContext (reconcile.ContextWithObserver): setup is the
// operator's own, such as the examples' controller.SetupWithManager, with nothing added for the test.
//
//	op := optest.StartOperator(t, env, controller.SetupWithManager)
//
// The manager talks to the API server as env.Config (admin); a harness.WithManagerConfig in opts is
// overridden. To count the requests of another identity, build the Operator by hand:
//
//	op := &optest.Operator{Requests: harness.NewRequestCounter(), Reconciles: optest.NewReconciles()}
//	op.Manager = env.StartManager(t, controller.SetupWithManager, op.Reconciles.Observing(),
//		harness.WithManagerConfig(op.Requests.Wrap(cfg)))
func StartOperator(t testing.TB, env *harness.Env, setup func(manager.Manager) error, opts ...harness.ManagerOption) *Operator {
	t.Helper()
	op := &Operator{Requests: harness.NewRequestCounter(), Reconciles: NewReconciles()}
	opts = append(slices.Clone(opts), op.Reconciles.Observing(), harness.WithManagerConfig(op.Requests.Wrap(env.Config)))
	op.Manager = env.StartManager(t, setup, opts...)
	return op
}

// Trigger makes one change that wakes the operator, such as a label someone else adds to a child, and
// returns the object it wrote as the API server answered (with its new resourceVersion). The object must
// be one the manager's cache holds: the operator's own object, a child, or an object of a kind it
// watches (for a metadata-only watch, a *metav1.PartialObjectMetadata with its kind set); reading an
// object of another kind makes the cache start an informer for it. A Trigger writes; it must not delete,
// nor wait for the operator.
type Trigger func(t testing.TB) client.Object

// ReconcileAfter runs trigger, waits until the manager's cache shows the object trigger wrote at the
// resourceVersion the API server answered or a newer one, and then until a reconcile of key that
// started once the cache showed it has finished, and returns that reconcile: the first that read the
// change. Neither an earlier queued reconcile of key nor a reconcile of another object satisfies it.
// On timeout (Timeout for each wait) the test fails with what the cache showed or the reconciles of key
// since the trigger; a change that does not wake the controller for key (one its predicates filter out)
// ends that way.
//
// Which reconcile started once the cache showed the change is decided as each reconcile of key starts
// (Reconciles.Observe reads the cache then), since a poll of the cache would see the change later than
// the informer, which stores it before it wakes the controller. A reconcile of key that starts while
// trigger runs waits for trigger to return, so that it knows which object to look for.
//
//	rec := op.ReconcileAfter(t, client.ObjectKeyFromObject(mc), func(t testing.TB) client.Object {
//		return optest.MergePatch(t, env.Client, mc, `{"metadata":{"annotations":{"example.com/note":"hello"}}}`)
//	})
func (op *Operator) ReconcileAfter(t testing.TB, key client.ObjectKey, trigger Trigger) Reconcile {
	t.Helper()
	before := op.Reconciles.Mark()
	e := op.Reconciles.expect(key)
	defer op.Reconciles.drop(e)
	written := trigger(t)
	if written == nil {
		t.Fatalf("the trigger for %s returned no object: return the object it wrote, as the API server answered", key)
		return Reconcile{}
	}
	// A copy of its own: the test may change the trigger's object while reconciles still read this one.
	probe, ok := written.DeepCopyObject().(client.Object)
	if !ok {
		t.Fatalf("%T does not deep-copy to a client.Object", written)
		return Reconcile{}
	}
	rv := probe.GetResourceVersion()
	if rv == "" {
		t.Fatalf("the trigger for %s returned %s %s without a resourceVersion: return the object as the API server answered",
			key, harness.KindOf(op.Manager.GetClient(), probe), client.ObjectKeyFromObject(probe))
		return Reconcile{}
	}
	op.Reconciles.arm(e, func(ctx context.Context) bool {
		ok, _ := op.cacheShows(ctx, probe, rv)
		return ok
	})

	ctx := context.WithoutCancel(t.Context())
	harness.Eventually(t, Timeout, func() (bool, string) { return op.cacheShows(ctx, probe, rv) })
	var rec Reconcile
	harness.Eventually(t, Timeout, func() (bool, string) {
		var ok bool
		if rec, ok = op.Reconciles.met(e); ok {
			return true, ""
		}
		return false, fmt.Sprintf("the manager's cache shows %s %s at resourceVersion %s or newer, but no reconcile of %s that "+
			"started since then has finished; reconciles of %s since the trigger (marks count starts and ends): %s",
			harness.KindOf(op.Manager.GetClient(), probe), client.ObjectKeyFromObject(probe), rv, key, key, describe(op.Reconciles.Since(key, before)))
	})
	return rec
}

// ExpectNoRequests checks that the operator leaves its converged object owner alone whatever wakes it
// up. For each trigger, in a subtest, it forgets the requests recorded so far, runs the trigger, waits
// for the reconcile of owner that read the change (ReconcileAfter), and fails the subtest if the
// manager sent any request in owner's namespace meanwhile, a read as much as a write, naming each one,
// or if that reconcile returned an error.
//
//	op.ExpectNoRequests(t, client.ObjectKeyFromObject(mc), map[string]optest.Trigger{
//		"annotation on the memcached": func(t testing.TB) client.Object {
//			return optest.MergePatch(t, env.Client, mc, `{"metadata":{"annotations":{"example.com/note":"hello"}}}`)
//		},
//		"deployment status changed by the deployment controller": func(t testing.TB) client.Object {
//			optest.MarkDeploymentProgressing(t, env.Client, client.ObjectKeyFromObject(mc))
//			return optest.MergePatch(t, env.Client, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: mc.Namespace, Name: mc.Name}},
//				`{"metadata":{"labels":{"example.com/seen":"progressing"}}}`)
//		},
//	})
//
// A change that wakes no reconcile cannot be a trigger by itself: by default a Convergo Reconciler is
// not woken by a child's status change that leaves the child's readiness as its ReadyWhen judged it
// (see reconcile.WithEveryChildChange), so such a trigger follows the change with one that wakes the
// owner, such as a label on the same child, whose reconcile then reads both.
func (op *Operator) ExpectNoRequests(t *testing.T, owner client.ObjectKey, triggers map[string]Trigger) {
	t.Helper()
	for name, trigger := range triggers {
		t.Run(name, func(t *testing.T) {
			op.Requests.Reset()
			rec := op.ReconcileAfter(t, owner, trigger)
			reqs := op.Requests.Snapshot().InNamespace(owner.Namespace)
			t.Logf("the change was read by the reconcile of %s", rec)
			if rec.Err != nil {
				t.Errorf("the reconcile of %s that read the change failed: %v", owner, rec.Err)
			}
			if len(reqs) != 0 {
				t.Errorf("the operator sent %d requests in namespace %s between the change and the end of the reconcile "+
					"of %s that read it, want none:\n%s\n%s", len(reqs), owner.Namespace, owner, reqs, listRequests(reqs))
			}
		})
	}
}

// cacheShows reports whether the manager's cache holds obj at resourceVersion rv or a newer one, and
// otherwise what it holds.
func (op *Operator) cacheShows(ctx context.Context, obj client.Object, rv string) (bool, string) {
	key := client.ObjectKeyFromObject(obj)
	kind := harness.KindOf(op.Manager.GetClient(), obj)
	got, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return false, fmt.Sprintf("%T does not deep-copy to a client.Object", obj)
	}
	if err := op.Manager.GetCache().Get(ctx, key, got); err != nil {
		return false, fmt.Sprintf("the manager's cache does not show %s %s: %v (does the operator watch that kind, and does the cache's selector let the object in?)", kind, key, err)
	}
	if !atLeast(got.GetResourceVersion(), rv) {
		return false, fmt.Sprintf("the manager's cache shows %s %s at resourceVersion %s, want %s or newer", kind, key, got.GetResourceVersion(), rv)
	}
	return true, ""
}

// atLeast reports whether resourceVersion have is want or newer. Resource versions are opaque to
// clients, but kube-apiserver's are etcd revisions, which grow; versions that are not numbers are only
// compared for equality.
func atLeast(have, want string) bool {
	h, herr := strconv.ParseUint(have, 10, 64)
	w, werr := strconv.ParseUint(want, 10, 64)
	if herr != nil || werr != nil {
		return have == want
	}
	return h >= w
}

// listRequests renders one line per request, for failure messages.
func listRequests(reqs harness.Requests) string {
	var b strings.Builder
	for _, r := range reqs {
		target := r.Path
		if r.ResourceRequest() {
			target = r.FullResource()
			if r.APIGroup != "" {
				target = r.APIGroup + "/" + r.APIVersion + " " + target
			} else {
				target = r.APIVersion + " " + target
			}
			if r.Name != "" {
				target += " " + r.Namespace + "/" + r.Name
			}
		}
		fmt.Fprintf(&b, "  %s %s: %d\n", r.Verb, target, r.StatusCode)
	}
	return b.String()
}
