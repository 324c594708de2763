package apply

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/convergo-dev/convergo/internal/telemetry"
	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile/internal/applytest"
	"github.com/convergo-dev/convergo/reconcile/internal/intent"
)

// These tests use the fake client for the Applier's own logic (ownership decisions, the intent
// hash, graph walking). What depends on the API server (defaulting, SSA field ownership,
// immutable fields, deletion) is tested in the integration tests.

func TestApplyCreatedThenUnchanged(t *testing.T) {
	w := &applytest.WriteCounter{}
	c := applytest.NewFake(t, w)
	a := NewApplier(c, c)
	app := applytest.Owner("app")
	desired := applytest.DesiredCM(map[string]string{"k": "v"})
	before := desired.DeepCopy()

	live, op, err := a.Apply(t.Context(), app, desired)
	if err != nil {
		t.Fatal(err)
	}
	if op != OperationCreated {
		t.Fatalf("first apply: %s, want Created", op)
	}
	if diff := cmp.Diff(before, desired); diff != "" {
		t.Errorf("Apply modified desired (-before +after):\n%s", diff)
	}
	got := live.(*corev1.ConfigMap)
	if got.Namespace != "ns" {
		t.Errorf("namespace = %q, want the owner's", got.Namespace)
	}
	if !ownership.IsControlledBy(got, app) || !ownership.IsTrackedBy(got, app) {
		t.Errorf("child not controlled and tracked by owner: refs %v labels %v", got.OwnerReferences, got.Labels)
	}
	if got.Annotations[intent.HashAnnotation] == "" {
		t.Errorf("no intent hash annotation: %v", got.Annotations)
	}
	w.N = 0
	for i := range 3 {
		_, op, err := a.Apply(t.Context(), app, applytest.DesiredCM(map[string]string{"k": "v"}))
		if err != nil || op != OperationUnchanged {
			t.Fatalf("apply %d: %s, %v; want Unchanged", i, op, err)
		}
	}
	if w.N != 0 {
		t.Errorf("%d writes for an unchanged child, want 0", w.N)
	}
	_, op, err = a.Apply(t.Context(), app, applytest.DesiredCM(map[string]string{"k": "v2"}))
	if err != nil || op != OperationUpdated {
		t.Fatalf("changed apply: %s, %v; want Updated", op, err)
	}
	if w.N != 1 {
		t.Errorf("%d writes for one change, want 1", w.N)
	}
}

func TestApplyDetectsLiveDrift(t *testing.T) {
	c := applytest.NewFake(t, nil)
	a := NewApplier(c, c)
	app := applytest.Owner("app")
	if _, _, err := a.Apply(t.Context(), app, applytest.DesiredCM(map[string]string{"k": "v"})); err != nil {
		t.Fatal(err)
	}
	// Someone else changes a field we own; the hash still matches, the subset check does not.
	live := &corev1.ConfigMap{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "child"}, live); err != nil {
		t.Fatal(err)
	}
	live.Data["k"] = "tampered"
	live.Data["other"] = "added by someone else"
	if err := c.Update(t.Context(), live); err != nil {
		t.Fatal(err)
	}
	_, op, err := a.Apply(t.Context(), app, applytest.DesiredCM(map[string]string{"k": "v"}))
	if err != nil || op != OperationUpdated {
		t.Fatalf("apply after drift: %s, %v; want Updated", op, err)
	}
}

// TestApplyRepairsDriftBetweenNumberLikeStrings: strings that happen to parse as quantities are
// still compared as written; only a value the server canonicalised ("1000m" held as "1") counts as
// the same.
func TestApplyRepairsDriftBetweenNumberLikeStrings(t *testing.T) {
	cases := map[string]struct {
		desired, tampered string
	}{
		"version":   {desired: "1.10", tampered: "1.1"},
		"exponent":  {desired: "10", tampered: "1e1"},
		"suffix":    {desired: "1Gi", tampered: "1024Mi"},
		"fractions": {desired: "0.5", tampered: "500m"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := applytest.NewFake(t, nil)
			a := NewApplier(c, c)
			app := applytest.Owner("app")
			if _, _, err := a.Apply(t.Context(), app, applytest.DesiredCM(map[string]string{"v": tc.desired})); err != nil {
				t.Fatal(err)
			}
			live := &corev1.ConfigMap{}
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "child"}, live); err != nil {
				t.Fatal(err)
			}
			live.Data["v"] = tc.tampered
			if err := c.Update(t.Context(), live); err != nil {
				t.Fatal(err)
			}
			_, op, err := a.Apply(t.Context(), app, applytest.DesiredCM(map[string]string{"v": tc.desired}))
			if err != nil || op != OperationUpdated {
				t.Fatalf("apply after %q was changed to %q: %s, %v; want Updated", tc.desired, tc.tampered, op, err)
			}
		})
	}
}

func TestApplyOwnership(t *testing.T) {
	other := applytest.Owner("other")
	app := applytest.Owner("app")
	controlledByOther := applytest.DesiredCM(nil)
	controlledByOther.Namespace = "ns"
	if err := ownership.SetController(other, controlledByOther, applytest.Scheme(t)); err != nil {
		t.Fatal(err)
	}
	trackedByOther := applytest.DesiredCM(nil)
	trackedByOther.Namespace = "ns"
	if err := ownership.Track(other, trackedByOther, applytest.Scheme(t)); err != nil {
		t.Fatal(err)
	}
	orphan := applytest.DesiredCM(nil)
	orphan.Namespace = "ns"
	orphan.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "not-a-controller"}}

	cases := map[string]struct {
		live    client.Object
		opts    []Option
		wantErr func(error) bool
		want    string
	}{
		"controlled by another owner": {
			live: controlledByOther,
			wantErr: func(err error) bool {
				var e *ownership.AlreadyOwnedError
				return errors.As(err, &e) && e.Current.UID == other.UID && e.Owner.UID == app.UID
			},
			want: "already controlled by ConfigMap ns/other (uid uid-other), not by ConfigMap ns/app (uid uid-app)",
		},
		"tracked by another owner": {
			live: trackedByOther,
			wantErr: func(err error) bool {
				var e *ownership.AlreadyOwnedError
				return errors.As(err, &e) && e.Current.UID == other.UID
			},
			want: "ConfigMap ns/other",
		},
		"orphan refused": {
			live:    orphan,
			wantErr: func(err error) bool { var e *OrphanError; return errors.As(err, &e) },
			want:    "apply.WithAdoptOrphans()",
		},
		"orphan adopted on request": {
			live: orphan,
			opts: []Option{WithAdoptOrphans()},
		},
		"controlled by another owner even with adoption": {
			live: controlledByOther,
			opts: []Option{WithAdoptOrphans()},
			wantErr: func(err error) bool {
				var e *ownership.AlreadyOwnedError
				return errors.As(err, &e)
			},
			want: "already controlled",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &applytest.WriteCounter{}
			c := applytest.NewFake(t, w, tc.live.DeepCopyObject().(client.Object))
			_, op, err := NewApplier(c, c, tc.opts...).Apply(t.Context(), app, applytest.DesiredCM(map[string]string{"k": "v"}))
			if tc.wantErr == nil {
				if err != nil || op != OperationUpdated {
					t.Fatalf("Apply = %s, %v; want Updated", op, err)
				}
				live := &corev1.ConfigMap{}
				if err := c.Get(t.Context(), client.ObjectKeyFromObject(tc.live), live); err != nil {
					t.Fatal(err)
				}
				if !ownership.IsControlledBy(live, app) {
					t.Errorf("adopted child not controlled by owner: %v", live.OwnerReferences)
				}
				return
			}
			if err == nil || !tc.wantErr(err) {
				t.Fatalf("Apply error = %v (%T), not the expected kind", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Apply error = %q, want it to contain %q", err, tc.want)
			}
			if w.N != 0 {
				t.Errorf("%d writes despite the refusal", w.N)
			}
		})
	}
}

func TestApplyClusterScopedChildOfNamespacedOwner(t *testing.T) {
	c := applytest.NewFake(t, nil)
	app := applytest.Owner("app")
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "app-role", Namespace: "ignored"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}},
	}
	live, op, err := NewApplier(c, c).Apply(t.Context(), app, role)
	if err != nil || op != OperationCreated {
		t.Fatalf("Apply = %s, %v; want Created", op, err)
	}
	if len(live.GetOwnerReferences()) != 0 {
		t.Errorf("cluster-scoped child got owner references %v", live.GetOwnerReferences())
	}
	if live.GetNamespace() != "" {
		t.Errorf("cluster-scoped child has namespace %q", live.GetNamespace())
	}
	ref, ok := ownership.TrackedOwner(live)
	want := ownership.Reference{Kind: "ConfigMap", Namespace: "ns", Name: "app", UID: "uid-app"}
	if !ok || ref != want {
		t.Errorf("TrackedOwner = %+v, %v; want %+v", ref, ok, want)
	}
}

func TestApplyNamespacedChildWithoutNamespace(t *testing.T) {
	_, _, err := newFakeApplier(t).Apply(t.Context(), nil, applytest.DesiredCM(nil))
	if err == nil || !strings.Contains(err.Error(), "has no namespace") {
		t.Fatalf("Apply = %v, want a missing namespace error", err)
	}
}

func TestApplyTerminating(t *testing.T) {
	app := applytest.Owner("app")
	live := applytest.DesiredCM(nil)
	live.Namespace = "ns"
	live.Finalizers = []string{"example.com/hold"}
	live.DeletionTimestamp = ptr.To(metav1.Now())
	if err := ownership.SetController(app, live, applytest.Scheme(t)); err != nil {
		t.Fatal(err)
	}
	_, _, err := newFakeApplier(t, live).Apply(t.Context(), app, applytest.DesiredCM(nil))
	if !errors.Is(err, ErrTerminating) {
		t.Fatalf("Apply = %v, want ErrTerminating", err)
	}
}

// TestApplySkipsWriteWhileCacheLags simulates a cache that still shows the object as it was before
// our last write: the same intent is not written twice.
func TestApplySkipsWriteWhileCacheLags(t *testing.T) {
	w := &applytest.WriteCounter{}
	c := applytest.NewFake(t, w)
	app := applytest.Owner("app")
	a := NewApplier(c, c)
	if _, _, err := a.Apply(t.Context(), app, applytest.DesiredCM(map[string]string{"k": "v"})); err != nil {
		t.Fatal(err)
	}
	stale := &corev1.ConfigMap{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "child"}, stale); err != nil {
		t.Fatal(err)
	}
	lagging := interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			stale.DeepCopyInto(obj.(*corev1.ConfigMap))
			return nil
		},
	})
	a = NewApplier(lagging, lagging)
	w.N = 0
	for i := range 3 {
		_, op, err := a.Apply(t.Context(), app, applytest.DesiredCM(map[string]string{"k": "v2"}))
		want := OperationUnchanged
		if i == 0 {
			want = OperationUpdated
		}
		if err != nil || op != want {
			t.Fatalf("apply %d = %s, %v; want %s", i, op, err, want)
		}
	}
	if w.N != 1 {
		t.Errorf("%d writes, want 1", w.N)
	}
	// Another intent is written even though the cache still lags.
	if _, op, err := a.Apply(t.Context(), app, applytest.DesiredCM(map[string]string{"k": "v3"})); err != nil || op != OperationUpdated {
		t.Fatalf("apply of a new intent = %s, %v; want Updated", op, err)
	}
}

func TestApplyBody(t *testing.T) {
	plain := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "child", "namespace": "ns"},
		"data":     map[string]any{"k": "v <&>"},
	}
	annotated := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "child", "annotations": map[string]any{"a": "b"}},
	}
	const rest = `"data":{"k":"v \u003c\u0026\u003e"},"kind":"ConfigMap","metadata":{`
	cases := map[string]struct {
		intent map[string]any
		guard  applyGuard
		why    string
		want   string
	}{
		"no guard": {intent: plain, guard: applyGuard{}, want: `{"apiVersion":"v1",` + rest + `"name":"child","namespace":"ns"}}`},
		"create":   {intent: plain, guard: createOnly, want: `{"apiVersion":"v1",` + rest + `"name":"child","namespace":"ns","resourceVersion":"1"}}`},
		"same UID": {intent: plain, guard: applyGuard{uid: "u-1"}, want: `{"apiVersion":"v1",` + rest + `"name":"child","namespace":"ns","uid":"u-1"}}`},
		"why, no guard": {intent: plain, why: "changed",
			want: `{"apiVersion":"v1",` + rest + `"annotations":{"convergo.dev/written-for":"changed"},"name":"child","namespace":"ns"}}`},
		"why, create, annotated": {intent: annotated, guard: createOnly, why: "child ConfigMap ns/x",
			want: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{"a":"b","convergo.dev/written-for":"child ConfigMap ns/x"},"name":"child","resourceVersion":"1"}}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			intent := tc.intent
			before, err := json.Marshal(intent)
			if err != nil {
				t.Fatal(err)
			}
			body, err := applyBody(intent, tc.guard, tc.why)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(body)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			// The intent is left as it was.
			after, err := json.Marshal(intent)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(before), string(after)); diff != "" {
				t.Errorf("intent changed (-before +after):\n%s", diff)
			}
		})
	}
}

func TestApplyFieldManager(t *testing.T) {
	var managers []string
	c := fake.NewClientBuilder().WithScheme(applytest.Scheme(t)).WithRESTMapper(applytest.Mapper()).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if patch.Type() != types.ApplyPatchType {
					t.Errorf("patch of type %s, want an apply patch", patch.Type())
				}
				o := &client.PatchOptions{}
				o.ApplyOptions(opts)
				managers = append(managers, o.FieldManager)
				if !ptr.Deref(o.Force, false) {
					t.Error("apply without force")
				}
				return c.Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	if _, _, err := NewApplier(c, c).Apply(t.Context(), applytest.Owner("app"), applytest.DesiredCM(nil)); err != nil {
		t.Fatal(err)
	}
	desired := applytest.DesiredCM(nil)
	desired.Name = "other"
	if _, _, err := NewApplier(c, c, WithFieldManager("memcached")).Apply(t.Context(), applytest.Owner("app"), desired); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{defaultFieldManager, "memcached"}, managers); diff != "" {
		t.Errorf("field managers (-want +got):\n%s", diff)
	}
}

func TestImmutableFields(t *testing.T) {
	cases := map[string]struct {
		err        error
		wantFields []string
		want       bool
	}{
		"deployment selector": {
			err: apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "d", field.ErrorList{
				field.Invalid(field.NewPath("spec", "selector"), "x", "field is immutable"),
			}),
			wantFields: []string{"spec.selector"},
			want:       true,
		},
		"service clusterIP": {
			err: apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "s", field.ErrorList{
				field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), "x", "may not change once set"),
			}),
			wantFields: []string{"spec.clusterIPs[0]"},
			want:       true,
		},
		"other validation error": {
			err: apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "s", field.ErrorList{
				field.Required(field.NewPath("spec", "ports"), ""),
			}),
		},
		"not found": {err: apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, "s")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fields, ok := immutableFields(tc.err)
			if ok != tc.want {
				t.Fatalf("immutableFields ok = %v, want %v", ok, tc.want)
			}
			if diff := cmp.Diff(tc.wantFields, fields); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplyCrossNamespaceChildIsTracked(t *testing.T) {
	c := applytest.NewFake(t, nil)
	a := NewApplier(c, c)
	app := applytest.Owner("app")
	desired := applytest.DesiredCM(map[string]string{"k": "v"})
	desired.Namespace = "elsewhere"
	live, op, err := a.Apply(t.Context(), app, desired)
	if err != nil || op != OperationCreated {
		t.Fatalf("Apply = %s, %v; want Created", op, err)
	}
	if len(live.GetOwnerReferences()) != 0 || !ownership.IsTrackedBy(live, app) {
		t.Errorf("cross-namespace child: refs %v labels %v; want tracked without owner reference", live.GetOwnerReferences(), live.GetLabels())
	}
	// Ours by tracking label: applying again is fine, and unchanged.
	if _, op, err := a.Apply(t.Context(), app, desired); err != nil || op != OperationUnchanged {
		t.Errorf("second Apply = %s, %v; want Unchanged", op, err)
	}
}

func TestApplyFuncRefusesRename(t *testing.T) {
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child", Namespace: "ns"}}
	_, err := newFakeApplier(t).ApplyFunc(t.Context(), applytest.Owner("app"), obj, func() error {
		obj.Name = "renamed"
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "changed the object's name") {
		t.Fatalf("ApplyFunc = %v, want a rename error", err)
	}
}

func TestApplyFuncResetsObject(t *testing.T) {
	c := applytest.NewFake(t, nil)
	a := NewApplier(c, c)
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child", Namespace: "ns"}}
	var seen map[string]string
	mutate := func() error {
		seen = obj.Data
		obj.Data = map[string]string{"k": "v"}
		return nil
	}
	if op, err := a.ApplyFunc(t.Context(), applytest.Owner("app"), obj, mutate); err != nil || op != OperationCreated {
		t.Fatalf("ApplyFunc = %s, %v; want Created", op, err)
	}
	if obj.ResourceVersion == "" || obj.Labels[ownership.OwnerUIDLabel] != "uid-app" {
		t.Errorf("obj does not hold the live object: %+v", obj.ObjectMeta)
	}
	if op, err := a.ApplyFunc(t.Context(), applytest.Owner("app"), obj, mutate); err != nil || op != OperationUnchanged {
		t.Fatalf("second ApplyFunc = %s, %v; want Unchanged", op, err)
	}
	if seen != nil {
		t.Errorf("mutate saw live data %v, want an empty object", seen)
	}
}

// countingReader is an API reader that counts its reads and can fail them.
type countingReader struct {
	client.Reader
	gets int
	err  error
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets++
	if r.err != nil {
		return r.err
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// TestApplyDoesNotCreateTwiceWhileCacheLags: the cache does not show a child the Applier has just
// created; the second Apply reads it once from the API server instead of writing it again, and writes
// only when the child is really gone or does not hold the intent. Without an API reader, the Applier
// reads with its own client, here the cache: it cannot tell, and says what to do.
func TestApplyDoesNotCreateTwiceWhileCacheLags(t *testing.T) {
	cases := map[string]struct {
		noReader   bool
		readerErr  error
		between    func(t *testing.T, server client.Client) // after the create
		secondData string
		wantOp     Operation
		wantErr    string
		wantWrites int // by the second Apply
		wantReads  int
	}{
		"the cache as API reader":      {noReader: true, wantErr: "mgr.GetAPIReader()", wantWrites: 1},
		"found through the API reader": {wantOp: OperationUnchanged, wantReads: 1},
		"deleted meanwhile": {
			between: func(t *testing.T, server client.Client) {
				if err := server.Delete(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "child"}}); err != nil {
					t.Fatal(err)
				}
			},
			wantOp: OperationCreated, wantWrites: 1, wantReads: 1,
		},
		"intent changed":   {secondData: "v2", wantOp: OperationUpdated, wantWrites: 1, wantReads: 1},
		"API reader fails": {readerErr: errors.New("connection refused"), wantErr: "connection refused", wantReads: 1},
		"modified meanwhile": {
			between: func(t *testing.T, server client.Client) {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "child"}}
				if err := server.Patch(t.Context(), cm, client.RawPatch(types.MergePatchType, []byte(`{"data":{"k":"changed"}}`))); err != nil {
					t.Fatal(err)
				}
			},
			wantOp: OperationUpdated, wantWrites: 1, wantReads: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &applytest.WriteCounter{}
			server := applytest.NewFake(t, w)
			// The cache never shows the child.
			cache := interceptor.NewClient(server, interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
				},
			})
			reader := &countingReader{Reader: server, err: tc.readerErr}
			var apiReader client.Reader = reader
			if tc.noReader {
				apiReader = cache
			}
			a := NewApplier(cache, apiReader)
			app := applytest.Owner("app")
			if _, op, err := a.Apply(t.Context(), app, applytest.DesiredCM(map[string]string{"k": "v"})); err != nil || op != OperationCreated {
				t.Fatalf("first apply = %s, %v; want Created", op, err)
			}
			if tc.between != nil {
				tc.between(t, server)
			}
			data := "v"
			if tc.secondData != "" {
				data = tc.secondData
			}
			w.N = 0
			live, op, err := a.Apply(t.Context(), app, applytest.DesiredCM(map[string]string{"k": data}))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("second apply: error %v, want one containing %q", err, tc.wantErr)
				}
				if w.N != tc.wantWrites || reader.gets != tc.wantReads {
					t.Errorf("second apply: %d writes and %d reads, want %d and %d", w.N, reader.gets, tc.wantWrites, tc.wantReads)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				Op     Operation
				Writes int
				Reads  int
				Data   string
			}
			want := result{Op: tc.wantOp, Writes: tc.wantWrites, Reads: tc.wantReads, Data: data}
			got := result{Op: op, Writes: w.N, Reads: reader.gets}
			if cm, ok := live.(*corev1.ConfigMap); ok {
				got.Data = cm.Data["k"]
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("second apply (-want +got):\n%s", diff)
			}
		})
	}
}

// TestApplyRecordsGoOnceTheCacheShowsTheChild: the record of a write lives only until the cache shows
// that write; an operator with many converged children keeps none.
func TestApplyRecordsGoOnceTheCacheShowsTheChild(t *testing.T) {
	c := applytest.NewFake(t, nil)
	a := NewApplier(c, c)
	app := applytest.Owner("app")
	steps := []struct {
		data        string
		wantOp      Operation
		wantRecords int
	}{
		{data: "v", wantOp: OperationCreated, wantRecords: 1},   // created: a cache miss is not absence
		{data: "v", wantOp: OperationUnchanged, wantRecords: 0}, // the cache shows it: record gone
		{data: "w", wantOp: OperationUpdated, wantRecords: 1},
		{data: "w", wantOp: OperationUnchanged, wantRecords: 0},
	}
	for i, s := range steps {
		_, op, err := a.Apply(t.Context(), app, applytest.DesiredCM(map[string]string{"k": s.data}))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]any{s.wantOp, s.wantRecords}, []any{op, a.known.len()}); diff != "" {
			t.Errorf("step %d: operation and records (-want +got):\n%s", i, diff)
		}
	}
}

// TestWithWriteGuard: a guard that refuses stops every DELETE the Applier would send; the child stays
// and the guard's error is returned.
func TestWithWriteGuard(t *testing.T) {
	refused := errors.New("the member may no longer write")
	cases := map[string]struct {
		guard     func() error
		wantErr   error
		wantExist bool
	}{
		"no guard":      {},
		"guard allows":  {guard: func() error { return nil }},
		"guard refuses": {guard: func() error { return refused }, wantErr: refused, wantExist: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := applytest.NewFake(t, nil)
			var opts []Option
			if tc.guard != nil {
				opts = append(opts, WithWriteGuard(tc.guard))
			}
			a := NewApplier(c, c, opts...)
			app := applytest.Owner("app")
			desired := applytest.DesiredCM(map[string]string{"k": "v"})
			if _, _, err := a.Apply(t.Context(), app, desired); err != nil {
				t.Fatal(err)
			}
			_, err := a.Delete(t.Context(), app, desired)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Errorf("Delete error = %v, want %v", err, tc.wantErr)
			}
			exists := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "child"}, &corev1.ConfigMap{}) == nil
			if exists != tc.wantExist {
				t.Errorf("child exists = %v, want %v", exists, tc.wantExist)
			}
		})
	}
}

// newFakeApplier returns an Applier on a fake client holding objs, which is also its API reader.
func newFakeApplier(t *testing.T, objs ...client.Object) *Applier {
	c := applytest.NewFake(t, nil, objs...)
	return NewApplier(c, c)
}

// TestNewApplierRefusesNilReader: a nil API reader is refused at construction, with the fix in the
// message, rather than failing re-applies later while the cache lags.
func TestNewApplierRefusesNilReader(t *testing.T) {
	c := applytest.NewFake(t, nil)
	cases := map[string]struct {
		reader    client.Reader
		wantPanic error
	}{
		"nil":           {reader: nil, wantPanic: errNilAPIReader},
		"the client":    {reader: c},
		"an API reader": {reader: applytest.NewFake(t, nil)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got error
			func() {
				defer func() {
					if r := recover(); r != nil {
						got, _ = r.(error)
					}
				}()
				NewApplier(c, tc.reader)
			}()
			if diff := cmp.Diff(tc.wantPanic, got, cmpopts.EquateErrors()); diff != "" {
				t.Errorf("panic (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWrittenFor checks which writes carry the reconcile's trigger: all but a Deployment's, whose
// annotations the Deployment controller copies to its ReplicaSets (each change would cost a write).
func TestWrittenFor(t *testing.T) {
	ctx := telemetry.WithTrigger(t.Context(), "child", "ConfigMap ns/x")
	cases := map[string]struct {
		gvk  schema.GroupVersionKind
		want string
	}{
		"ConfigMap":                      {gvk: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, want: "child ConfigMap ns/x"},
		"StatefulSet":                    {gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, want: "child ConfigMap ns/x"},
		"Deployment":                     {gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}},
		"a custom kind named Deployment": {gvk: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Deployment"}, want: "child ConfigMap ns/x"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, writtenFor(ctx, tc.gvk)); diff != "" {
				t.Errorf("written-for (-want +got):\n%s", diff)
			}
		})
	}
}
