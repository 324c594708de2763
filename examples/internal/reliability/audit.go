package reliability

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/harness"
)

// Expectation is what a namespace must look like once an operator has recovered from a fault.
type Expectation struct {
	// Operator is the operator under test.
	Operator *Operator
	// Namespace is the namespace of the objects.
	Namespace string
	// Deleted names the objects whose deletion was asked: they must be gone.
	Deleted []string
	// Kept are condition types other writers set on the objects: they must still be there.
	Kept []string
}

// Report is what Audit found.
type Report struct {
	// Objects is the number of the operator's objects found, Ready how many of them are Ready for
	// their current generation, Children the number of children found.
	Objects, Ready, Children int
	// Problems describes every broken guarantee; empty when all hold.
	Problems []string
}

// OK reports whether every guarantee holds.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// String renders the report for test logs.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d objects, %d ready, %d children", r.Objects, r.Ready, r.Children)
	for _, p := range r.Problems {
		b.WriteString("\n  - ")
		b.WriteString(p)
	}
	return b.String()
}

// Audit checks the guarantees every fault must leave intact, in one namespace:
//   - every object not asked to be deleted is Ready=True for its current generation (also in
//     observedGeneration), with neither Reconciling nor Stalled true, and holds the operator's
//     finalizer exactly once;
//   - every object asked to be deleted is gone (a leaked finalizer would keep it);
//   - no condition another writer set (Expectation.Kept) was lost;
//   - every child of the operator's kinds belongs to an object that exists (no orphan), and every
//     remaining object has exactly one child of each kind, controlled by it.
//
// c should be an uncached client, so that the audit sees the API server's truth.
func Audit(ctx context.Context, c client.Reader, exp Expectation) (Report, error) {
	var rep Report
	op := exp.Operator
	list := op.NewList()
	if err := c.List(ctx, list, client.InNamespace(exp.Namespace)); err != nil {
		return rep, fmt.Errorf("list %s objects: %w", op.Name, err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return rep, fmt.Errorf("extract %s objects: %w", op.Name, err)
	}
	owners := map[types.UID]string{}
	for _, item := range items {
		obj, ok := item.(status.Object)
		if !ok {
			return rep, fmt.Errorf("%T has no conditions", item)
		}
		rep.Objects++
		name := obj.GetName()
		owners[obj.GetUID()] = name
		if slices.Contains(exp.Deleted, name) {
			rep.problem("%s %s was asked to be deleted but still exists (deletionTimestamp %v, finalizers %v, Ready %s)",
				op.Name, name, obj.GetDeletionTimestamp(), obj.GetFinalizers(), describeCondition(obj, status.Ready))
			continue
		}
		if ready := auditObject(&rep, op, obj, exp.Kept); ready {
			rep.Ready++
		}
	}

	perOwner := map[string]map[string]int{} // owner name -> kind -> count
	states := map[string][]string{}         // owner name -> its children's states, for messages
	for _, kind := range op.Children {
		children := kind.NewList()
		if err := c.List(ctx, children, client.InNamespace(exp.Namespace)); err != nil {
			return rep, fmt.Errorf("list %ss: %w", kind.Kind, err)
		}
		objs, err := meta.ExtractList(children)
		if err != nil {
			return rep, fmt.Errorf("extract %ss: %w", kind.Kind, err)
		}
		for _, o := range objs {
			child, ok := o.(client.Object)
			if !ok || !managedBy(child, op) {
				continue
			}
			rep.Children++
			uid := types.UID(child.GetLabels()[ownership.OwnerUIDLabel])
			owner, exists := owners[uid]
			ref := metav1.GetControllerOf(child)
			switch {
			case !exists:
				owner := op.Kind
				if tracked, ok := ownership.TrackedOwner(child); ok {
					owner += " " + tracked.Name
				}
				rep.problem("orphaned %s %s: its owner %s (uid %s) does not exist", kind.Kind, child.GetName(), owner, uid)
				continue
			case ref == nil || ref.UID != uid:
				rep.problem("%s %s is not controlled by %s %s (controller reference %v)", kind.Kind, child.GetName(), op.Name, owner, ref)
			}
			if perOwner[owner] == nil {
				perOwner[owner] = map[string]int{}
			}
			perOwner[owner][kind.Kind]++
			states[owner] = append(states[owner], childState(kind.Kind, child))
		}
	}
	for _, item := range items {
		obj := item.(status.Object)
		if obj.GetDeletionTimestamp() != nil || slices.Contains(exp.Deleted, obj.GetName()) {
			continue
		}
		for _, kind := range op.Children {
			if n := perOwner[obj.GetName()][kind.Kind]; n != 1 {
				rep.problem("%s %s has %d %ss, want 1", op.Name, obj.GetName(), n, kind.Kind)
			}
		}
		if !status.IsReady(obj) {
			rep.problem("(children of the %s %s that is not Ready: %s)", op.Name, obj.GetName(), strings.Join(states[obj.GetName()], "; "))
		}
	}
	return rep, nil
}

// childState describes a child in one line for failure messages.
func childState(kind string, child client.Object) string {
	s := fmt.Sprintf("%s %s (generation %d, resourceVersion %s", kind, child.GetName(), child.GetGeneration(), child.GetResourceVersion())
	if d, ok := child.(*appsv1.Deployment); ok {
		s += fmt.Sprintf(", observedGeneration %d, replicas %d/%d ready, %d available", d.Status.ObservedGeneration,
			d.Status.ReadyReplicas, ptr.Deref(d.Spec.Replicas, 1), d.Status.AvailableReplicas)
	}
	if child.GetDeletionTimestamp() != nil {
		s += ", terminating"
	}
	return s + ")"
}

// auditObject checks one object that should be converged and reports whether it is Ready.
func auditObject(rep *Report, op *Operator, obj status.Object, kept []string) bool {
	name, gen := obj.GetName(), obj.GetGeneration()
	ok := true
	ready := meta.FindStatusCondition(obj.GetConditions(), status.Ready)
	switch {
	case ready == nil || ready.Status != metav1.ConditionTrue:
		rep.problem("%s %s is not Ready: Ready %s, Reconciling %s, Stalled %s", op.Name, name,
			describeCondition(obj, status.Ready), describeCondition(obj, status.Reconciling), describeCondition(obj, status.Stalled))
		ok = false
	case ready.ObservedGeneration != gen:
		rep.problem("%s %s is Ready for generation %d, but its generation is %d", op.Name, name, ready.ObservedGeneration, gen)
		ok = false
	}
	for _, t := range []string{status.Reconciling, status.Stalled} {
		if meta.IsStatusConditionTrue(obj.GetConditions(), t) {
			rep.problem("%s %s has %s=True (%s)", op.Name, name, t, describeCondition(obj, t))
			ok = false
		}
	}
	if g, has := observedGeneration(obj); has && g != gen {
		rep.problem("%s %s has status.observedGeneration %d, want %d", op.Name, name, g, gen)
		ok = false
	}
	if n := countOf(obj.GetFinalizers(), op.Finalizer); n != 1 {
		rep.problem("%s %s holds finalizer %s %d times (finalizers %v), want once", op.Name, name, op.Finalizer, n, obj.GetFinalizers())
		ok = false
	}
	for _, t := range kept {
		if meta.FindStatusCondition(obj.GetConditions(), t) == nil {
			rep.problem("%s %s lost condition %s set by another writer (conditions: %s)", op.Name, name, t, conditionTypes(obj))
			ok = false
		}
	}
	return ok
}

func (r *Report) problem(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// managedBy reports whether child was created by op (the standard managed-by label its builders set,
// or Convergo's tracking marks naming an owner of op's kind).
func managedBy(child client.Object, op *Operator) bool {
	if child.GetLabels()["app.kubernetes.io/managed-by"] == op.Controller {
		return true
	}
	owner, ok := ownership.TrackedOwner(child)
	return ok && owner.Kind == op.Kind
}

func countOf(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}

// describeCondition renders a condition as "Status/Reason (gen N): message", or "absent".
func describeCondition(obj status.Object, condType string) string {
	c := meta.FindStatusCondition(obj.GetConditions(), condType)
	if c == nil {
		return "absent"
	}
	return fmt.Sprintf("%s/%s (gen %d): %s", c.Status, c.Reason, c.ObservedGeneration, c.Message)
}

func conditionTypes(obj status.Object) string {
	var types []string
	for _, c := range obj.GetConditions() {
		types = append(types, c.Type)
	}
	return strings.Join(types, ",")
}

// WaitConverged polls Audit until every guarantee holds and fails the test with the last report
// when that does not happen within timeout. It returns the final report.
func WaitConverged(t testing.TB, c client.Reader, exp Expectation, timeout time.Duration) Report {
	t.Helper()
	var rep Report
	harness.Eventually(t, timeout, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 30*time.Second)
		defer cancel()
		var err error
		rep, err = Audit(ctx, c, exp)
		if err != nil {
			return false, "audit: " + err.Error()
		}
		return rep.OK(), rep.String()
	})
	return rep
}

// observedGeneration returns obj's status.observedGeneration, and false when it has none.
func observedGeneration(obj client.Object) (int64, bool) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return 0, false
	}
	g, has, err := unstructured.NestedInt64(u, "status", "observedGeneration")
	return g, has && err == nil
}
