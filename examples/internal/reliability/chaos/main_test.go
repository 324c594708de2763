//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/examples/internal/reliability"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/cluster"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestMain starts one full local cluster for the package; the tests break it and it must recover.
func TestMain(m *testing.M) {
	harness.Main(m,
		harness.WithFullCluster(cluster.WithNodes(2)),
		harness.WithCRDPaths(reliability.CRDDirs()...),
		harness.WithSchemeAdders(reliability.SchemeAdders...),
	)
}

// Timeouts: generous, the machine running the tests is often loaded.
const (
	convergeTimeout = 5 * time.Minute
	// objects is the number of objects of each operator a test drives through a fault.
	objects = 10
)

// subject is one operator under test in its own namespace.
type subject struct {
	op    *reliability.Operator
	ns    string
	names []string
	rec   *reliability.Recorder
	mgr   *reliability.Manager
}

// startSubjects starts a manager for each operator, each in a fresh namespace whose objects and
// children are recorded.
func startSubjects(t *testing.T, env *harness.Env, opts ...reliability.ManagerOption) []*subject {
	t.Helper()
	var out []*subject
	for _, op := range reliability.Operators {
		s := &subject{op: op, ns: env.Namespace(t), names: reliability.Names(op.Name, objects)}
		s.rec = reliability.RecordOperator(t, env.Config, env.Scheme, op, s.ns)
		s.mgr = reliability.StartManager(t, env.Config, env.Scheme, op.Setup,
			append([]reliability.ManagerOption{reliability.WithName(op.Name), reliability.WithNamespace(s.ns), reliability.WithLogVerbosity(1)}, opts...)...)
		reliability.DeleteAtCleanup(t, env.Client, op, s.ns)
		t.Cleanup(func() { s.explain(t, env) })
		out = append(out, s)
	}
	return out
}

// expectation is what s's namespace must look like, with deleted the names asked to be deleted.
func (s *subject) expectation(deleted []string) reliability.Expectation {
	return reliability.Expectation{Operator: s.op, Namespace: s.ns, Deleted: deleted, Kept: []string{reliability.ForeignCondition}}
}

// forEach calls f for every item of list.
func forEach(list client.ObjectList, f func(client.Object)) error {
	return meta.EachListItem(list, func(o runtime.Object) error {
		if obj, ok := o.(client.Object); ok {
			f(obj)
		}
		return nil
	})
}

// explain logs, when the test failed, the history of every object of s that is not plainly Ready: the
// requests the manager made for its name (with their answers) and the object as stored.
func (s *subject) explain(t *testing.T, env *harness.Env) {
	if !t.Failed() {
		return
	}
	ctx := context.WithoutCancel(t.Context())
	list := s.op.NewList()
	if err := env.Client.List(ctx, list, client.InNamespace(s.ns)); err != nil {
		t.Logf("explain: %v", err)
		return
	}
	_ = forEach(list, func(o client.Object) {
		obj, ok := o.(status.Object)
		if !ok || status.IsReady(obj) && !meta.IsStatusConditionTrue(obj.GetConditions(), status.Reconciling) && !meta.IsStatusConditionTrue(obj.GetConditions(), status.Stalled) {
			return
		}
		var b strings.Builder
		for _, r := range s.mgr.Requests.Snapshot() {
			if r.Name == obj.GetName() && r.Verb != "get" {
				fmt.Fprintf(&b, "  %s %s -> %d\n", r.Verb, r.FullResource(), r.StatusCode)
			}
		}
		obj.SetManagedFields(nil)
		t.Logf("EXPLAIN %s %s/%s (manager %s):\nrequests for its name (no gets):\n%sobject:\n%s",
			s.op.Name, s.ns, obj.GetName(), s.mgr.Name, b.String(), harness.ObjectYAML(obj))
	})
}
