package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/internal/kobj"
)

// Patcher writes an object's status with a JSON merge patch of the status subresource that holds only
// what changed, guarded by the object's resourceVersion. On a conflict it re-reads the object, re-applies
// only its own changes onto the fresh copy and tries again, so conditions and fields written by others
// in the meantime survive.
//
// Conditions are expected under status.conditions as a list keyed by type (the metav1.Condition
// convention); any other status field is compared and patched as JSON.
type Patcher struct {
	client client.Client
	reader client.Reader
	retry  wait.Backoff
}

// Option configures a Patcher.
type Option func(*config)

type config struct {
	reader client.Reader
	retry  wait.Backoff
}

// WithAPIReader sets the reader used to re-read the object after a conflict. Default: the Patcher's client.
// Pass an uncached reader (such as manager.GetAPIReader()) so that a retry starts from the latest state
// rather than from a cache that may lag behind the write that caused the conflict.
func WithAPIReader(r client.Reader) Option { return func(c *config) { c.reader = r } }

// WithRetry sets how a patch answered 409 Conflict is retried on a fresh copy: b.Steps attempts in
// all, the first at once, then after b.Duration, growing by b.Factor (apimachinery's wait.Backoff).
// Default: 6 attempts, 10ms doubling (retry.DefaultRetry's shape, with one more step).
func WithRetry(b wait.Backoff) Option { return func(c *config) { c.retry = b } }

// NewPatcher returns a Patcher that writes through c.
func NewPatcher(c client.Client, opts ...Option) *Patcher {
	cfg := config{reader: c, retry: wait.Backoff{Duration: 10 * time.Millisecond, Factor: 2, Steps: 6}}
	for _, o := range opts {
		o(&cfg)
	}
	return &Patcher{client: c, reader: cfg.reader, retry: cfg.retry}
}

// Patch writes obj's status if it differs from before, a deep copy of obj taken before the status was
// changed. It sends nothing and returns false when the status is unchanged. Only the difference is sent:
// changed fields, removed fields as null, and, when a condition changed, the condition list.
//
// The patch carries obj's resourceVersion. If the server answers 409 Conflict, Patch re-reads the object,
// re-applies only the changes between before and obj (conditions added, changed or removed by type, and
// other status fields) onto the fresh copy, and retries with the fresh resourceVersion, as
// WithRetry says. Conditions that only others changed are kept as the server has them.
//
// On success obj is replaced by the server's answer (or by the fresh copy when the retry found nothing
// left to write, in which case Patch returns false). Patch reports whether it wrote.
func (p *Patcher) Patch(ctx context.Context, obj, before client.Object) (bool, error) {
	if reflect.DeepEqual(obj, before) {
		return false, nil // nothing changed, the status least of all: no conversion needed to see it
	}
	cur, err := statusMap(obj)
	if err != nil {
		return false, err
	}
	old, err := statusMap(before)
	if err != nil {
		return false, err
	}
	d := computeDelta(old, cur)
	if d.empty() {
		return false, nil
	}
	rv := obj.GetResourceVersion()
	body := mergeDiff(old, cur)
	var (
		wrote    bool
		attempts int
		lastErr  error
	)
	// The first attempt goes at once; after a conflict, wait (the backoff), re-read, rebuild.
	err = wait.ExponentialBackoffWithContext(ctx, p.retry, func(ctx context.Context) (bool, error) {
		if attempts > 0 {
			fresh := kobj.NewLike(obj)
			if err := p.reader.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
				return false, fmt.Errorf("re-read %s after conflict: %w", kobj.Describe(obj), err)
			}
			freshStatus, err := statusMap(fresh)
			if err != nil {
				return false, err
			}
			body = mergeDiff(freshStatus, d.applyTo(freshStatus))
			if len(body) == 0 {
				return true, kobj.CopyInto(obj, fresh) // nothing left to write
			}
			rv = fresh.GetResourceVersion()
		}
		attempts++
		lastErr = p.send(ctx, obj, rv, body)
		switch {
		case lastErr == nil:
			wrote = true
			return true, nil
		case apierrors.IsConflict(lastErr):
			return false, nil
		}
		return false, fmt.Errorf("patch status of %s: %w", kobj.Describe(obj), lastErr)
	})
	switch {
	case wait.Interrupted(err) && lastErr != nil:
		return false, fmt.Errorf("patch status of %s: %w", kobj.Describe(obj), errors.Join(lastErr, ctx.Err()))
	case err != nil:
		return false, err
	}
	return wrote, nil
}

func (p *Patcher) send(ctx context.Context, obj client.Object, rv string, status map[string]any) error {
	doc := map[string]any{"status": status}
	if rv != "" {
		doc["metadata"] = map[string]any{"resourceVersion": rv}
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode status patch: %w", err)
	}
	out := kobj.NewLike(obj)
	if err := p.client.Status().Patch(ctx, out, client.RawPatch(types.MergePatchType, data)); err != nil {
		return err
	}
	return kobj.CopyInto(obj, out)
}

// delta is what one writer changed in a status: conditions by type and the other fields as a JSON merge
// patch.
type delta struct {
	// setConds are the conditions added or changed, in the order they appear after the change.
	setConds []map[string]any
	// removedConds are the types of conditions removed.
	removedConds []string
	// fields is a JSON merge patch of the status without its conditions.
	fields map[string]any
}

func (d delta) empty() bool {
	return len(d.setConds) == 0 && len(d.removedConds) == 0 && len(d.fields) == 0
}

// computeDelta returns what changed from old to cur. A status.conditions list whose entries all have a
// string type is compared by type; otherwise it is treated like any other field.
func computeDelta(old, cur map[string]any) delta {
	oldConds, okOld := conditionList(old)
	curConds, okCur := conditionList(cur)
	if !okOld || !okCur {
		return delta{fields: mergeDiff(old, cur)}
	}
	var d delta
	for _, c := range curConds {
		prev := findCondition(oldConds, condType(c))
		if prev == nil || !reflect.DeepEqual(prev, c) {
			d.setConds = append(d.setConds, c)
		}
	}
	for _, c := range oldConds {
		if findCondition(curConds, condType(c)) == nil {
			d.removedConds = append(d.removedConds, condType(c))
		}
	}
	d.fields = mergeDiff(withoutConditions(old), withoutConditions(cur))
	d.removedConds = append(d.removedConds, excludedByKstatus(d)...)
	return d
}

// excludedByKstatus returns the condition types that the kstatus conditions d sets to True rule out:
// Ready=True excludes Reconciling and Stalled, and Reconciling and Stalled exclude each other. Re-applied
// on a fresh copy after a conflict, they also clear what an earlier write of ours left there when its
// answer was lost (our before-copy never saw it, so no plain difference removes it).
func excludedByKstatus(d delta) []string {
	var out []string
	exclude := func(types ...string) {
		for _, t := range types {
			if findCondition(d.setConds, t) == nil && !slices.Contains(d.removedConds, t) && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	for _, c := range d.setConds {
		if c["status"] != string(metav1.ConditionTrue) {
			continue
		}
		switch condType(c) {
		case Ready:
			exclude(Reconciling, Stalled)
		case Reconciling:
			exclude(Stalled)
		case Stalled:
			exclude(Reconciling)
		}
	}
	return out
}

// applyTo returns a copy of status with the delta applied: removed conditions dropped, changed ones
// replaced in place, new ones appended, and the field patch merged.
func (d delta) applyTo(status map[string]any) map[string]any {
	out := applyMergePatch(runtime.DeepCopyJSON(status), d.fields)
	if len(d.setConds) == 0 && len(d.removedConds) == 0 {
		return out
	}
	conds, ok := conditionList(out)
	if !ok {
		conds = nil // not a typed list on the server: ours replaces it
	}
	var merged []any
	for _, c := range conds {
		t := condType(c)
		if slices.Contains(d.removedConds, t) {
			continue
		}
		if ours := findCondition(d.setConds, t); ours != nil {
			merged = append(merged, runtime.DeepCopyJSONValue(ours))
			continue
		}
		merged = append(merged, c)
	}
	for _, c := range d.setConds {
		if findCondition(conds, condType(c)) == nil {
			merged = append(merged, runtime.DeepCopyJSONValue(c))
		}
	}
	if len(merged) == 0 {
		delete(out, "conditions")
	} else {
		out["conditions"] = merged
	}
	return out
}

// conditionList returns status.conditions as maps when every entry is a map with a string type; an
// absent list is an empty one.
func conditionList(status map[string]any) ([]map[string]any, bool) {
	raw, found := status["conditions"]
	if !found || raw == nil {
		return nil, true
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, false
	}
	out := make([]map[string]any, 0, len(list))
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, false
		}
		if _, ok := m["type"].(string); !ok {
			return nil, false
		}
		out = append(out, m)
	}
	return out, true
}

func condType(c map[string]any) string {
	t, _ := c["type"].(string)
	return t
}

func findCondition(conds []map[string]any, t string) map[string]any {
	for _, c := range conds {
		if condType(c) == t {
			return c
		}
	}
	return nil
}

func withoutConditions(status map[string]any) map[string]any {
	out := make(map[string]any, len(status))
	for k, v := range status {
		if k != "conditions" {
			out[k] = v
		}
	}
	return out
}

// mergeDiff returns the JSON merge patch (RFC 7386) that turns a into b: changed or added keys with b's
// value (objects recursively), removed keys as null. Lists are replaced whole.
func mergeDiff(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, bv := range b {
		av, found := a[k]
		if !found {
			out[k] = bv
			continue
		}
		am, aIsMap := av.(map[string]any)
		bm, bIsMap := bv.(map[string]any)
		if aIsMap && bIsMap {
			if sub := mergeDiff(am, bm); len(sub) > 0 {
				out[k] = sub
			}
			continue
		}
		if !reflect.DeepEqual(av, bv) {
			out[k] = bv
		}
	}
	for k := range a {
		if _, found := b[k]; !found {
			out[k] = nil
		}
	}
	return out
}

// applyMergePatch applies a JSON merge patch to doc in place and returns it.
func applyMergePatch(doc, patch map[string]any) map[string]any {
	if doc == nil {
		doc = map[string]any{}
	}
	for k, pv := range patch {
		if pv == nil {
			delete(doc, k)
			continue
		}
		pm, pIsMap := pv.(map[string]any)
		if !pIsMap {
			doc[k] = runtime.DeepCopyJSONValue(pv)
			continue
		}
		dm, _ := doc[k].(map[string]any)
		doc[k] = applyMergePatch(dm, pm)
	}
	return doc
}

// statusMap returns obj's status as JSON-compatible maps (empty when absent).
func statusMap(obj client.Object) (map[string]any, error) {
	var content map[string]any
	if u, ok := obj.(runtime.Unstructured); ok {
		content = u.UnstructuredContent()
	} else {
		var err error
		content, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, fmt.Errorf("convert %s: %w", kobj.Describe(obj), err)
		}
	}
	st, found, err := unstructured.NestedMap(content, "status")
	if err != nil {
		return nil, fmt.Errorf("read status of %s: %w", kobj.Describe(obj), err)
	}
	if !found || st == nil {
		return map[string]any{}, nil
	}
	return st, nil
}
