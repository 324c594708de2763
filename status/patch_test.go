package status

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/convergo-dev/convergo/internal/testapi"
)

func c(t, s string) map[string]any { return map[string]any{"type": t, "status": s} }

func TestComputeDeltaAndApply(t *testing.T) {
	cases := map[string]struct {
		old, cur, fresh map[string]any
		wantPatch       map[string]any // mergeDiff(old, cur): what the first attempt sends
		wantMerged      map[string]any // delta applied onto fresh
	}{
		"no change": {
			old:        map[string]any{"summary": "x", "conditions": []any{c("A", "True")}},
			cur:        map[string]any{"summary": "x", "conditions": []any{c("A", "True")}},
			fresh:      map[string]any{"summary": "y", "conditions": []any{c("B", "True")}},
			wantPatch:  map[string]any{},
			wantMerged: map[string]any{"summary": "y", "conditions": []any{c("B", "True")}},
		},
		"changed condition replaces in place, others' conditions kept": {
			old:        map[string]any{"conditions": []any{c("A", "True"), c("Ready", "False")}},
			cur:        map[string]any{"conditions": []any{c("A", "True"), c("Ready", "True")}},
			fresh:      map[string]any{"conditions": []any{c("Ext", "True"), c("Ready", "False"), c("A", "False")}},
			wantPatch:  map[string]any{"conditions": []any{c("A", "True"), c("Ready", "True")}},
			wantMerged: map[string]any{"conditions": []any{c("Ext", "True"), c("Ready", "True"), c("A", "False")}},
		},
		"added condition is appended, removed one dropped": {
			old:        map[string]any{"conditions": []any{c("Reconciling", "True"), c("Ready", "False")}},
			cur:        map[string]any{"conditions": []any{c("Ready", "True"), c("New", "True")}},
			fresh:      map[string]any{"conditions": []any{c("Reconciling", "True"), c("Ext", "True"), c("Ready", "False")}},
			wantPatch:  map[string]any{"conditions": []any{c("Ready", "True"), c("New", "True")}},
			wantMerged: map[string]any{"conditions": []any{c("Ext", "True"), c("Ready", "True"), c("New", "True")}},
		},
		"removing the last condition drops the list": {
			old:        map[string]any{"conditions": []any{c("A", "True")}},
			cur:        map[string]any{},
			fresh:      map[string]any{"conditions": []any{c("A", "True")}},
			wantPatch:  map[string]any{"conditions": nil},
			wantMerged: map[string]any{},
		},
		"fields: changed, added, removed, nested; others' fields kept": {
			old:        map[string]any{"summary": "a", "gone": int64(1), "nested": map[string]any{"x": int64(1), "y": int64(2)}},
			cur:        map[string]any{"summary": "b", "added": true, "nested": map[string]any{"x": int64(1), "y": int64(3)}},
			fresh:      map[string]any{"summary": "a", "gone": int64(1), "theirs": "t", "nested": map[string]any{"x": int64(9), "y": int64(2)}},
			wantPatch:  map[string]any{"summary": "b", "added": true, "gone": nil, "nested": map[string]any{"y": int64(3)}},
			wantMerged: map[string]any{"summary": "b", "added": true, "theirs": "t", "nested": map[string]any{"x": int64(9), "y": int64(3)}},
		},
		"conditions that are not a typed list are a plain field": {
			old:        map[string]any{"conditions": []any{"a"}},
			cur:        map[string]any{"conditions": []any{"b"}},
			fresh:      map[string]any{"conditions": []any{"c"}},
			wantPatch:  map[string]any{"conditions": []any{"b"}},
			wantMerged: map[string]any{"conditions": []any{"b"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantPatch, mergeDiff(tc.old, tc.cur)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
			d := computeDelta(tc.old, tc.cur)
			if d.empty() != (len(tc.wantPatch) == 0) {
				t.Errorf("delta empty = %v, patch %v", d.empty(), tc.wantPatch)
			}
			freshCopy := runtime.DeepCopyJSON(tc.fresh)
			if diff := cmp.Diff(tc.wantMerged, d.applyTo(tc.fresh)); diff != "" {
				t.Errorf("merged (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(freshCopy, tc.fresh); diff != "" {
				t.Errorf("applyTo modified its input (-before +after):\n%s", diff)
			}
		})
	}
}

// recorder counts the status patches a fake client receives and can fail the first ones with a conflict
// after letting another writer change the object.
type recorder struct {
	patches   []string
	conflicts int
	other     func(ctx context.Context, c client.WithWatch) error
}

func (r *recorder) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			data, err := p.Data(obj)
			if err != nil {
				return err
			}
			r.patches = append(r.patches, string(data))
			if r.conflicts > 0 {
				r.conflicts--
				if r.other != nil {
					if err := r.other(ctx, c.(client.WithWatch)); err != nil {
						return err
					}
				}
				return apierrors.NewConflict(schema.GroupResource{Resource: "widgets"}, obj.GetName(), errors.New("the object has been modified"))
			}
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	}
}

func newFake(t *testing.T, r *recorder, objs ...client.Object) client.WithWatch {
	t.Helper()
	s := runtime.NewScheme()
	if err := testapi.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&testapi.Widget{}).WithInterceptorFuncs(r.funcs()).Build()
}

func TestPatcherNoChangeSendsNothing(t *testing.T) {
	r := &recorder{}
	w := widget(1, cond(Ready, True, "R", "", 1, t0))
	w.Status.ObservedGeneration = 1
	cl := newFake(t, r, w)
	if err := cl.Get(t.Context(), client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	before := w.DeepCopy()
	MarkReady(w, "R", "") // same as before
	wrote, err := NewPatcher(cl).Patch(t.Context(), w, before)
	if err != nil || wrote {
		t.Fatalf("Patch = %v, %v; want false, nil", wrote, err)
	}
	if len(r.patches) != 0 {
		t.Errorf("sent %d patches, want 0", len(r.patches))
	}
}

func TestPatcherSendsOnlyTheDifference(t *testing.T) {
	pinClock(t, t1)
	r := &recorder{}
	w := widget(1, cond("Ext", True, "Theirs", "", 1, t0))
	w.Status.Summary = "old"
	w.Status.ReadyChildren = 2
	cl := newFake(t, r, w)
	if err := cl.Get(t.Context(), client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	before := w.DeepCopy()
	w.Status.Summary = "new"
	wrote, err := NewPatcher(cl).Patch(t.Context(), w, before)
	if err != nil || !wrote {
		t.Fatalf("Patch = %v, %v; want true, nil", wrote, err)
	}
	want := []string{`{"metadata":{"resourceVersion":"` + before.ResourceVersion + `"},"status":{"summary":"new"}}`}
	if diff := cmp.Diff(want, r.patches); diff != "" {
		t.Errorf("patches (-want +got):\n%s", diff)
	}
	if w.ResourceVersion == before.ResourceVersion {
		t.Error("obj was not updated from the response")
	}
}

func TestPatcherRetriesConflictKeepingOthersConditions(t *testing.T) {
	pinClock(t, t1)
	r := &recorder{conflicts: 1}
	w := widget(1, cond(Ready, False, "Progressing", "", 1, t0), cond(Reconciling, True, "Progressing", "", 1, t0))
	cl := newFake(t, r, w)
	ctx := t.Context()
	if err := cl.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	// Another writer adds its own condition and changes a field between our read and our patch.
	r.other = func(ctx context.Context, c client.WithWatch) error {
		o := &testapi.Widget{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), o); err != nil {
			return err
		}
		o.Status.Conditions = append(o.Status.Conditions, cond("Ext", True, "Theirs", "", 1, t0))
		o.Status.Summary = "theirs"
		return c.Status().Update(ctx, o)
	}
	before := w.DeepCopy()
	MarkReady(w, "Succeeded", "done")
	w.Status.ReadyChildren = 3
	wrote, err := NewPatcher(cl, WithRetry(wait.Backoff{Duration: 0, Factor: 2, Steps: 6})).Patch(ctx, w, before)
	if err != nil || !wrote {
		t.Fatalf("Patch = %v, %v; want true, nil", wrote, err)
	}
	if len(r.patches) != 2 {
		t.Fatalf("sent %d patches, want 2 (conflict, retry): %v", len(r.patches), r.patches)
	}
	var retry struct {
		Metadata map[string]string `json:"metadata"`
		Status   map[string]any    `json:"status"`
	}
	if err := json.Unmarshal([]byte(r.patches[1]), &retry); err != nil {
		t.Fatal(err)
	}
	if retry.Metadata["resourceVersion"] == before.ResourceVersion {
		t.Error("retry reused the stale resourceVersion")
	}
	got := &testapi.Widget{}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	wantConds := []metav1.Condition{cond(Ready, True, "Succeeded", "done", 1, t1), cond("Ext", True, "Theirs", "", 1, t0)}
	if diff := cmp.Diff(wantConds, got.Status.Conditions); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if got.Status.Summary != "theirs" || got.Status.ReadyChildren != 3 {
		t.Errorf("summary %q readyChildren %d; want theirs, 3", got.Status.Summary, got.Status.ReadyChildren)
	}
	if diff := cmp.Diff(got.Status, w.Status); diff != "" {
		t.Errorf("obj not updated from the final response (-server +obj):\n%s", diff)
	}
}

func TestPatcherGivesUpAfterMaxRetries(t *testing.T) {
	r := &recorder{conflicts: 100}
	w := widget(1)
	cl := newFake(t, r, w)
	if err := cl.Get(t.Context(), client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	before := w.DeepCopy()
	w.Status.Summary = "x"
	_, err := NewPatcher(cl, WithRetry(wait.Backoff{Duration: 0, Factor: 2, Steps: 2 + 1})).Patch(t.Context(), w, before)
	if !apierrors.IsConflict(err) {
		t.Errorf("err = %v, want a conflict", err)
	}
	if len(r.patches) != 3 {
		t.Errorf("sent %d patches, want 3", len(r.patches))
	}
}

func TestPatcherRetryWithNothingLeftToWrite(t *testing.T) {
	r := &recorder{conflicts: 1}
	w := widget(1)
	cl := newFake(t, r, w)
	ctx := t.Context()
	if err := cl.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	r.other = func(ctx context.Context, c client.WithWatch) error { // someone already wrote the same
		o := &testapi.Widget{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), o); err != nil {
			return err
		}
		o.Status.Summary = "same"
		return c.Status().Update(ctx, o)
	}
	before := w.DeepCopy()
	w.Status.Summary = "same"
	wrote, err := NewPatcher(cl, WithRetry(wait.Backoff{Duration: 0, Factor: 2, Steps: 6})).Patch(ctx, w, before)
	if err != nil || wrote {
		t.Fatalf("Patch = %v, %v; want false, nil", wrote, err)
	}
	if len(r.patches) != 1 {
		t.Errorf("sent %d patches, want 1", len(r.patches))
	}
	if w.ResourceVersion == before.ResourceVersion {
		t.Error("obj not refreshed from the re-read")
	}
}

func TestPatcherUnstructured(t *testing.T) {
	r := &recorder{conflicts: 1}
	w := widget(1)
	cl := newFake(t, r, w)
	ctx := t.Context()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(testapi.GroupVersion.WithKind("Widget"))
	if err := cl.Get(ctx, client.ObjectKeyFromObject(w), u); err != nil {
		t.Fatal(err)
	}
	before := u.DeepCopy()
	if err := unstructured.SetNestedField(u.Object, "hello", "status", "summary"); err != nil {
		t.Fatal(err)
	}
	wrote, err := NewPatcher(cl, WithRetry(wait.Backoff{Duration: 0, Factor: 2, Steps: 6})).Patch(ctx, u, before)
	if err != nil || !wrote {
		t.Fatalf("Patch = %v, %v; want true, nil", wrote, err)
	}
	got := &testapi.Widget{}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Summary != "hello" || u.GetResourceVersion() != got.ResourceVersion || u.GetKind() != "Widget" {
		t.Errorf("server summary %q; obj rv %s (server %s), kind %q", got.Status.Summary, u.GetResourceVersion(), got.ResourceVersion, u.GetKind())
	}
}

func TestPatcherFieldManager(t *testing.T) {
	cases := map[string]struct {
		owner string
		want  string
	}{
		"none by default":          {want: ""},
		"the client's field owner": {owner: "memcached", want: "memcached"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := runtime.NewScheme()
			if err := testapi.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			var got []string
			w := widget(1)
			cl := fake.NewClientBuilder().WithScheme(s).WithObjects(w).WithStatusSubresource(&testapi.Widget{}).
				WithInterceptorFuncs(interceptor.Funcs{
					SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
						got = append(got, (&client.SubResourcePatchOptions{}).ApplyOptions(opts).FieldManager)
						return c.SubResource(sub).Patch(ctx, obj, p, opts...)
					},
				}).Build()
			if err := cl.Get(t.Context(), client.ObjectKeyFromObject(w), w); err != nil {
				t.Fatal(err)
			}
			before := w.DeepCopy()
			w.Status.Summary = "changed"
			var c client.Client = cl
			if tc.owner != "" {
				c = client.WithFieldOwner(cl, tc.owner)
			}
			if _, err := NewPatcher(c).Patch(t.Context(), w, before); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{tc.want}, got); diff != "" {
				t.Errorf("field managers of the patches (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeltaClearsWhatKstatusExcludes covers a conflict after a lost answer: our earlier write (say
// Reconciling=True) reached the server but not us, so our before-copy lacks it; re-applying "Ready=True"
// on the fresh copy must still clear it, or the object would be Ready and Reconciling at once.
func TestDeltaClearsWhatKstatusExcludes(t *testing.T) {
	cond := func(typ, st string) map[string]any { return map[string]any{"type": typ, "status": st} }
	cases := map[string]struct {
		ours  map[string]any // the condition we set (before: none)
		fresh []any          // the server's conditions at the retry
		want  []string       // types left on the server, in order
	}{
		"lost Reconciling, then Ready": {
			ours:  cond(Ready, "True"),
			fresh: []any{cond(Reconciling, "True"), cond("Other", "True")},
			want:  []string{"Other", Ready},
		},
		"lost Stalled, then Ready": {
			ours:  cond(Ready, "True"),
			fresh: []any{cond(Stalled, "True")},
			want:  []string{Ready},
		},
		"lost Reconciling, then Stalled": {
			ours:  cond(Stalled, "True"),
			fresh: []any{cond(Reconciling, "True"), cond(Ready, "False")},
			want:  []string{Ready, Stalled},
		},
		"Ready=False excludes nothing": {
			ours:  cond(Ready, "False"),
			fresh: []any{cond(Reconciling, "True")},
			want:  []string{Reconciling, Ready},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := computeDelta(map[string]any{}, map[string]any{"conditions": []any{tc.ours}})
			out := d.applyTo(map[string]any{"conditions": tc.fresh})
			conds, _ := conditionList(out)
			var got []string
			for _, c := range conds {
				got = append(got, condType(c))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("conditions after the retry (-want +got):\n%s", diff)
			}
		})
	}
}

// BenchmarkPatchUnchanged is the cost of Patch when the reconcile changed nothing (every reconcile of a
// converged object, e.g. after a restart): no request, and no conversion of the object to compare.
func BenchmarkPatchUnchanged(b *testing.B) {
	w := widget(1, cond(Ready, True, "R", "", 1, t0))
	w.Spec.Data = map[string]string{"greeting": "hello", "name": "world"}
	before := w.DeepCopy()
	p := NewPatcher(nil)
	for b.Loop() {
		if wrote, err := p.Patch(b.Context(), w, before); wrote || err != nil {
			b.Fatalf("Patch = %v, %v; want false, nil", wrote, err)
		}
	}
}
