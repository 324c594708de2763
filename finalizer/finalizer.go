package finalizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/convergo-dev/convergo/internal/kobj"
)

// maxAttempts bounds how often a patch whose test operation failed is rebuilt from a fresh read.
const maxAttempts = 6

// backoff is the delay before the first retry; it doubles on each further retry.
const backoff = 10 * time.Millisecond

// Option configures Ensure, Remove and Finalize.
type Option func(*config)

type config struct {
	reader client.Reader
}

// WithAPIReader makes a retry after a failed test re-read the object through r instead of the client the
// call was given. Pass the manager's API reader (mgr.GetAPIReader()) when that client reads from a cache:
// a cache that lags behind would hand back the very list the server just refused.
func WithAPIReader(r client.Reader) Option { return func(c *config) { c.reader = r } }

func newConfig(c client.Client, opts []Option) config {
	cfg := config{reader: c}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.reader == nil {
		cfg.reader = c
	}
	return cfg
}

// Ensure adds the finalizer name to obj unless it is already listed, and reports whether it added it.
//
// When obj already lists name, Ensure makes no request. Otherwise it sends a JSON patch that only appends
// name, guarded by a test of the finalizer list it saw (a test for null when the list is absent): another
// controller's finalizers are never dropped, name is never listed twice, and changes to anything other
// than the finalizer list never conflict (no resourceVersion is sent). If the list changed in between, the
// server rejects the test (422); Ensure re-reads obj (through c, or WithAPIReader's reader) and tries again, a bounded number of times.
// obj is updated from the server's answer. Ensure refuses to add a finalizer to an object being deleted
// (the API server forbids it).
func Ensure(ctx context.Context, c client.Client, obj client.Object, name string, opts ...Option) (added bool, err error) {
	cfg := newConfig(c, opts)
	if err := validate(name); err != nil {
		return false, err
	}
	added, err = patchWithRetry(ctx, cfg.reader, obj, func(ctx context.Context) (bool, error) {
		current := obj.GetFinalizers()
		if slices.Contains(current, name) {
			return false, nil
		}
		if obj.GetDeletionTimestamp() != nil {
			return false, errors.New("object is being deleted")
		}
		ops := []operation{
			{Op: "test", Path: "/metadata/finalizers", Value: current},
			{Op: "add", Path: "/metadata/finalizers/-", Value: name},
		}
		if len(current) == 0 {
			ops = []operation{
				{Op: "test", Path: "/metadata/finalizers", Value: nil},
				{Op: "add", Path: "/metadata/finalizers", Value: []string{name}},
			}
		}
		return true, patch(ctx, c, obj, ops)
	})
	if err != nil {
		return false, fmt.Errorf("add finalizer %q to %s: %w", name, kobj.Describe(obj), err)
	}
	return added, nil
}

// Remove deletes the finalizer name from obj and reports whether it removed it. When obj does not list
// name, Remove makes no request; when the object no longer exists, it returns false and no error.
//
// The JSON patch tests that each position it removes still holds name before removing it, so another
// controller's finalizers are never touched, and it carries no resourceVersion, so unrelated changes never
// conflict. If the list moved in between, Remove re-reads obj through c and tries again, a bounded number of
// times. obj is updated from the server's answer.
func Remove(ctx context.Context, c client.Client, obj client.Object, name string, opts ...Option) (removed bool, err error) {
	cfg := newConfig(c, opts)
	removed, err = patchWithRetry(ctx, cfg.reader, obj, func(ctx context.Context) (bool, error) {
		var ops []operation
		current := obj.GetFinalizers()
		for i := len(current) - 1; i >= 0; i-- {
			if current[i] != name {
				continue
			}
			path := fmt.Sprintf("/metadata/finalizers/%d", i)
			ops = append(ops, operation{Op: "test", Path: path, Value: name}, operation{Op: "remove", Path: path})
		}
		if len(ops) == 0 {
			return false, nil
		}
		return true, patch(ctx, c, obj, ops)
	})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil // gone: nothing holds it any more
	case err != nil:
		return false, fmt.Errorf("remove finalizer %q from %s: %w", name, kobj.Describe(obj), err)
	}
	return removed, nil
}

// Finalize runs cleanup and removes the finalizer name only once cleanup reports done. cleanup
// releases what the object holds outside its owned children; it reports done=false while work is still
// in progress (Finalize then keeps the finalizer and the caller looks again later). It is meant for an
// object being deleted and is idempotent: when obj no longer lists name, cleanup already finished and
// Finalize returns done without running it again. A nil cleanup counts as done.
//
// It returns done=true once the finalizer is gone. When cleanup fails or is not done yet, the finalizer
// stays and Finalize returns done=false (with cleanup's error, if any).
func Finalize(ctx context.Context, c client.Client, obj client.Object, name string, cleanup func(ctx context.Context) (done bool, err error), opts ...Option) (done bool, err error) {
	if !controllerutil.ContainsFinalizer(obj, name) {
		return true, nil
	}
	if cleanup != nil {
		finished, err := cleanup(ctx)
		if err != nil {
			return false, fmt.Errorf("clean up %s before removing finalizer %q: %w", kobj.Describe(obj), name, err)
		}
		if !finished {
			return false, nil
		}
	}
	if _, err := Remove(ctx, c, obj, name, opts...); err != nil {
		return false, err
	}
	return true, nil
}

// operation is one RFC 6902 JSON patch operation. Value is always encoded, so a test for null is
// expressible (the API server's JSON patch treats a missing member as equal to null).
type operation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

func patch(ctx context.Context, c client.Client, obj client.Object, ops []operation) error {
	var doc []map[string]any
	for _, o := range ops {
		m := map[string]any{"op": o.Op, "path": o.Path}
		if o.Op != "remove" {
			m["value"] = o.Value
		}
		doc = append(doc, m)
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode patch: %w", err)
	}
	out := kobj.NewLike(obj)
	if err := c.Patch(ctx, out, client.RawPatch(types.JSONPatchType, data)); err != nil {
		return err
	}
	return kobj.CopyInto(obj, out)
}

// retryable reports whether a failed patch may succeed when rebuilt from a fresh read: the API server
// answers 422 when a test operation fails (and 409 on a rare storage conflict).
func retryable(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsConflict(err)
}

// patchWithRetry runs try, which reports whether it sent a patch and the patch's error. After a
// retryable error it waits (backoff, doubling each time), re-reads obj through r and runs try again,
// maxAttempts times at most. It returns whether the last try wrote.
func patchWithRetry(ctx context.Context, r client.Reader, obj client.Object, try func(context.Context) (bool, error)) (bool, error) {
	var (
		wrote    bool
		attempts int
		last     error
	)
	steps := wait.Backoff{Duration: backoff, Factor: 2, Steps: maxAttempts}
	err := wait.ExponentialBackoffWithContext(ctx, steps, func(ctx context.Context) (bool, error) {
		if attempts > 0 {
			fresh := kobj.NewLike(obj)
			if err := r.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
				return false, fmt.Errorf("re-read: %w", err)
			}
			if err := kobj.CopyInto(obj, fresh); err != nil {
				return false, err
			}
		}
		attempts++
		sent, err := try(ctx)
		switch {
		case err == nil:
			wrote = sent
			return true, nil
		case retryable(err):
			last = err
			return false, nil
		}
		return false, err
	})
	if wait.Interrupted(err) && last != nil {
		err = errors.Join(last, ctx.Err())
	}
	return wrote, err
}

// validate rejects names the API server would refuse, before any request: a finalizer is a qualified
// name, conventionally domain-prefixed ("example.com/cleanup").
func validate(name string) error {
	if errs := validation.IsQualifiedName(name); len(errs) > 0 {
		return fmt.Errorf("invalid finalizer name %q: %s", name, strings.Join(errs, "; "))
	}
	return nil
}
