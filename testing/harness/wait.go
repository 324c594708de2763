package harness

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// PollInterval is how often the wait helpers check.
const PollInterval = 100 * time.Millisecond

// Eventually calls check every PollInterval until it returns ok, and fails the test with t.Fatalf and
// the last state check reported if that does not happen within timeout. check runs on the calling
// goroutine. It works in t.Cleanup functions too.
func Eventually(t testing.TB, timeout time.Duration, check func() (ok bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := check()
		if ok {
			return
		}
		if !time.Now().Before(deadline) {
			t.Fatalf("condition not met within %s; last state:\n%s", timeout, state)
			return
		}
		time.Sleep(PollInterval)
	}
}

// WaitForObject reads key into obj every PollInterval until it exists and cond(obj) returns true (a nil
// cond only waits for existence). On timeout the test fails with the last object seen, as YAML, or the
// last read error.
func WaitForObject[T client.Object](t testing.TB, c client.Client, key client.ObjectKey, obj T, timeout time.Duration, cond func(T) bool) {
	t.Helper()
	ctx, cancel := waitContext(t, timeout)
	defer cancel()
	Eventually(t, timeout, func() (bool, string) {
		if err := c.Get(ctx, key, obj); err != nil {
			return false, fmt.Sprintf("get %s %s: %v", KindOf(c, obj), key, err)
		}
		if cond != nil && !cond(obj) {
			return false, fmt.Sprintf("%s %s does not meet the condition yet:\n%s", KindOf(c, obj), key, ObjectYAML(obj))
		}
		return true, ""
	})
}

// WaitForDeletion waits until obj is gone: not found, or replaced by an object with another UID. On
// timeout the test fails with the last object seen (its finalizers and deletionTimestamp show what
// holds it).
func WaitForDeletion(t testing.TB, c client.Client, obj client.Object, timeout time.Duration) {
	t.Helper()
	key := client.ObjectKeyFromObject(obj)
	uid := obj.GetUID()
	live, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		t.Fatalf("WaitForDeletion: %T does not deep-copy to a client.Object", obj)
		return
	}
	ctx, cancel := waitContext(t, timeout)
	defer cancel()
	Eventually(t, timeout, func() (bool, string) {
		err := c.Get(ctx, key, live)
		switch {
		case apierrors.IsNotFound(err):
			return true, ""
		case err != nil:
			return false, fmt.Sprintf("get %s %s: %v", KindOf(c, obj), key, err)
		case uid != "" && live.GetUID() != uid:
			return true, ""
		}
		return false, fmt.Sprintf("%s %s still exists:\n%s", KindOf(c, obj), key, ObjectYAML(live))
	})
}

// waitContext returns a context for the reads of a wait: the test's context without its cancellation
// (which happens before cleanups run, where waiting is legitimate), bounded by timeout plus a margin
// for the last read.
func waitContext(t testing.TB, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(t.Context()), timeout+30*time.Second)
}

// ObjectYAML renders obj as YAML without managed fields, for failure messages.
func ObjectYAML(obj runtime.Object) string {
	cp := obj.DeepCopyObject()
	if m, err := meta.Accessor(cp); err == nil {
		m.SetManagedFields(nil)
	}
	out, err := yaml.Marshal(cp)
	if err != nil {
		return fmt.Sprintf("<%T: cannot render as YAML: %v>", obj, err)
	}
	return string(out)
}

// KindOf names obj's kind for failure messages: from its type meta, else from c's scheme, else its Go
// type.
func KindOf(c client.Client, obj runtime.Object) string {
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != "" {
		return gvk.Kind
	}
	if gvk, err := c.GroupVersionKindFor(obj); err == nil {
		return gvk.Kind
	}
	return fmt.Sprintf("%T", obj)
}
