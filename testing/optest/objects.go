package optest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/testing/harness"
)

// Timeout bounds every wait of this package. It is generous because the machines running integration
// tests are often loaded; tests may use it for their own waits too.
const Timeout = 60 * time.Second

// updateAttempts is how many times Update tries before it gives up on conflicts.
const updateAttempts = 5

// Create creates obj and, at cleanup, deletes it and waits until it is gone. Cleanups run in reverse
// order, so an operator started before Create still runs then and releases its finalizer. It returns
// obj, as the API server stored it.
//
//	mc := optest.Create(t, env.Client, &v1alpha1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"}})
func Create[T client.Object](t testing.TB, c client.Client, obj T) T {
	t.Helper()
	if err := c.Create(t.Context(), obj); err != nil {
		t.Fatalf("create %s %s: %v", harness.KindOf(c, obj), obj.GetName(), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete %s %s: %v", harness.KindOf(c, obj), obj.GetName(), err)
		}
		harness.WaitForDeletion(t, c, obj, Timeout)
	})
	return obj
}

// Update reads obj afresh from the API server, applies mutate to that copy and writes it; on a conflict
// it starts over from a new read (five attempts at most). On success obj holds what the API server
// returned.
//
//	optest.Update(t, c, mc, func(mc *v1alpha1.Memcached) { mc.Spec.Size = 4 })
func Update[E any, T interface {
	*E
	client.Object
}](t testing.TB, c client.Client, obj T, mutate func(T)) {
	t.Helper()
	for range updateAttempts {
		live := T(new(E))
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), live); err != nil {
			t.Fatalf("get %s %s: %v", harness.KindOf(c, obj), obj.GetName(), err)
		}
		mutate(live)
		err := c.Update(t.Context(), live)
		if err == nil {
			*obj = *live
			return
		}
		if !apierrors.IsConflict(err) {
			t.Fatalf("update %s %s: %v", harness.KindOf(c, obj), obj.GetName(), err)
		}
	}
	t.Fatalf("update %s %s: %d conflicts in a row", harness.KindOf(c, obj), obj.GetName(), updateAttempts)
}

// MergePatch sends patch, a JSON merge patch, for obj (only its name and namespace are needed); obj
// then holds what the API server returned, which MergePatch also returns, so that it can end a Trigger.
//
//	optest.MergePatch(t, c, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"}},
//		`{"metadata":{"labels":{"example.com/team":"cache"}}}`)
func MergePatch[T client.Object](t testing.TB, c client.Client, obj T, patch string) T {
	t.Helper()
	if err := c.Patch(t.Context(), obj, client.RawPatch(client.Merge.Type(), []byte(patch))); err != nil {
		t.Fatalf("patch %s %s: %v", harness.KindOf(c, obj), client.ObjectKeyFromObject(obj), err)
	}
	return obj
}

// PatchFinalizers replaces the finalizers of obj with finalizers (removes them all when nil) with a merge
// patch; obj then holds what the API server returned. A test holds an object with a finalizer of its
// own to see what the operator does while the object is being deleted.
func PatchFinalizers(t testing.TB, c client.Client, obj client.Object, finalizers []string) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": finalizers}})
	if err != nil {
		t.Fatalf("encode the finalizers patch: %v", err)
	}
	MergePatch(t, c, obj, string(body))
}

// RequireNotDeleting reads key into each of objs and stops the test unless every one exists and is not
// being deleted.
func RequireNotDeleting(t testing.TB, c client.Client, key client.ObjectKey, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := c.Get(t.Context(), key, obj); err != nil || obj.GetDeletionTimestamp() != nil {
			t.Fatalf("%s %s deleted too early (get: %v, deletionTimestamp: %v)", harness.KindOf(c, obj), key, err, obj.GetDeletionTimestamp())
		}
	}
}
