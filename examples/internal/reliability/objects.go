package reliability

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/harness"
)

// ForeignCondition is the condition type the suites set on objects as "another controller", to check
// that the operator never drops conditions it does not own.
const ForeignCondition = "ExternallyAudited"

// Names returns "<prefix>-0" ... "<prefix>-<n-1>".
func Names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// CreateAll creates one valid object of op per name in namespace ns (through c, typically the
// environment's admin client) and returns them.
func CreateAll(t testing.TB, c client.Client, op *Operator, ns string, names []string) []client.Object {
	t.Helper()
	out := make([]client.Object, 0, len(names))
	for i, name := range names {
		obj := op.New(ns, name, i)
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatalf("create %s %s: %v", op.Name, name, err)
		}
		out = append(out, obj)
	}
	return out
}

// ChangeAll changes the spec of the named objects with op.Change, retrying on conflicts.
func ChangeAll(t testing.TB, c client.Client, op *Operator, ns string, names []string) {
	t.Helper()
	for i, name := range names {
		err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			obj := op.New(ns, name, 0)
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			op.Change(obj, i)
			return c.Update(t.Context(), obj)
		})
		if err != nil {
			t.Fatalf("change %s %s: %v", op.Name, name, err)
		}
	}
}

// DeleteAll asks for the deletion of the named objects.
func DeleteAll(t testing.TB, c client.Client, op *Operator, ns string, names []string) {
	t.Helper()
	for _, name := range names {
		obj := op.New(ns, name, 0)
		if err := c.Delete(t.Context(), obj); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("delete %s %s: %v", op.Name, name, err)
		}
	}
}

// SetForeignCondition adds ForeignCondition to the named objects' status, as another controller
// would (a status update with the usual conflict retry), so that Audit can check it is never lost.
func SetForeignCondition(t testing.TB, c client.Client, op *Operator, ns string, names []string) {
	t.Helper()
	for _, name := range names {
		err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			obj := op.New(ns, name, 0)
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			conds := obj.GetConditions()
			for _, cond := range conds {
				if cond.Type == ForeignCondition {
					return nil
				}
			}
			obj.SetConditions(append(conds, metav1.Condition{
				Type: ForeignCondition, Status: metav1.ConditionTrue, Reason: "Audited",
				Message: "set by the reliability suite acting as another controller", ObservedGeneration: obj.GetGeneration(),
				LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second)),
			}))
			return c.Status().Update(t.Context(), obj)
		})
		if err != nil {
			t.Fatalf("set %s on %s %s: %v", ForeignCondition, op.Name, name, err)
		}
	}
}

// Get reads the named object of op into a fresh object.
func Get(ctx context.Context, c client.Reader, op *Operator, ns, name string) (status.Object, error) {
	obj := op.New(ns, name, 0)
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// cleanupTimeout bounds the deletion of a test's objects at cleanup.
const cleanupTimeout = 3 * time.Minute

// DeleteAtCleanup deletes every object of op in namespace ns when the test ends and waits until
// they are gone. Register it after starting the operator's manager: cleanups run last-in first-out,
// so the operator is still running and releases its finalizers.
func DeleteAtCleanup(t testing.TB, c client.Client, op *Operator, ns string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := c.DeleteAllOf(ctx, op.New(ns, "", 0), client.InNamespace(ns)); err != nil {
			t.Errorf("delete %s objects in %s: %v", op.Name, ns, err)
			return
		}
		harness.Eventually(t, cleanupTimeout, func() (bool, string) {
			list := op.NewList()
			if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
				return false, err.Error()
			}
			n := meta.LenList(list)
			return n == 0, fmt.Sprintf("%d %s objects left in %s", n, op.Name, ns)
		})
	})
}
