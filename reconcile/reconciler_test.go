package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/status"
)

// rtManager is the part of a manager NewReconciler uses; any other method panics.
type rtManager struct {
	manager.Manager
	client client.Client
	scheme *runtime.Scheme
	ctrl   config.Controller
}

func (m rtManager) GetClient() client.Client                       { return m.client }
func (m rtManager) GetScheme() *runtime.Scheme                     { return m.scheme }
func (m rtManager) GetControllerOptions() config.Controller        { return m.ctrl }
func (m rtManager) GetCache() cache.Cache                          { return nil }
func (m rtManager) GetAPIReader() client.Reader                    { return m.client }
func (m rtManager) GetEventRecorder(string) recorder.EventRecorder { return nil }
func (m rtManager) GetConfig() *rest.Config                        { return nil }
func (m rtManager) GetHTTPClient() *http.Client                    { return nil }

func rtScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := testapi.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func rtReconciler(t testing.TB, opts ...ReconcilerOption) (*Reconciler[*testapi.Widget], *events.FakeRecorder) {
	t.Helper()
	s := rtScheme(t)
	rec := events.NewFakeRecorder(100)
	mgr := rtManager{client: fake.NewClientBuilder().WithScheme(s).Build(), scheme: s}
	r := NewReconciler(mgr, Hooks[*testapi.Widget]{Children: func(context.Context, *testapi.Widget) (*graph.Graph, error) { return graph.New(), nil }},
		append([]ReconcilerOption{withEventRecorder(rec)}, opts...)...)
	if r.initErr != nil {
		t.Fatal(r.initErr)
	}
	return r, rec
}

func drain(rec *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestInvalid(t *testing.T) {
	base := errors.New("size must be positive")
	cases := map[string]struct {
		err        error
		wantReason string
		wantMsg    string
		wantIs     error
	}{
		"formatted":         {err: Invalid("replicas %d > %d", 12, 10), wantReason: reasonInvalidSpec, wantMsg: "replicas 12 > 10"},
		"wrapping":          {err: Invalid("spec: %w", base), wantReason: reasonInvalidSpec, wantMsg: "spec: size must be positive", wantIs: base},
		"custom reason":     {err: &InvalidSpecError{Reason: "BadSize", Err: base}, wantReason: "BadSize", wantMsg: "size must be positive", wantIs: base},
		"wrapped by caller": {err: fmt.Errorf("build: %w", Invalid("x")), wantReason: reasonInvalidSpec, wantMsg: "x"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var inv *InvalidSpecError
			if !errors.As(tc.err, &inv) {
				t.Fatalf("errors.As(%v, *InvalidSpecError) = false", tc.err)
			}
			if inv.reason() != tc.wantReason || inv.Error() != tc.wantMsg {
				t.Errorf("reason %q message %q; want %q %q", inv.reason(), inv.Error(), tc.wantReason, tc.wantMsg)
			}
			if tc.wantIs != nil && !errors.Is(tc.err, tc.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", tc.err, tc.wantIs)
			}
		})
	}
}

func TestSetConditions(t *testing.T) {
	applied := func(name string, ready bool) graph.ChildResult {
		return graph.ChildResult{Name: name, Applied: true, Ready: ready, Operation: apply.OperationUnchanged}
	}
	cases := map[string]struct {
		out  outcome
		want map[string]string // type -> "Status Reason: Message"
	}{
		"invalid spec stalls": {
			out:  outcome{invalid: &InvalidSpecError{Err: errors.New("bad size")}},
			want: map[string]string{status.Ready: "False InvalidSpec: bad size", status.Stalled: "True InvalidSpec: bad size"},
		},
		"transient error": {
			out:  outcome{err: errors.New("apply child \"config\": connection refused")},
			want: map[string]string{status.Ready: `False ReconcileError: apply child "config": connection refused`, status.Reconciling: `True ReconcileError: apply child "config": connection refused`},
		},
		"a child held back by a dependency": {
			out: outcome{result: &graph.Result{
				Children: []graph.ChildResult{applied("config", false), {Name: "web"}},
				Waiting:  []string{"config: no key", "web waits for config: no key"},
			}},
			want: map[string]string{
				status.Ready:       "False WaitingForDependencies: config: no key; web waits for config: no key",
				status.Reconciling: "True WaitingForDependencies: config: no key; web waits for config: no key",
			},
		},
		"all applied, one not ready": {
			out: outcome{result: &graph.Result{
				Children: []graph.ChildResult{applied("config", true), applied("web", false)},
				Waiting:  []string{"web: 1 of 3 replicas available"},
			}},
			want: map[string]string{
				status.Ready:       "False Progressing: web: 1 of 3 replicas available",
				status.Reconciling: "True Progressing: web: 1 of 3 replicas available",
			},
		},
		"ready": {
			out:  outcome{result: &graph.Result{Ready: true, Children: []graph.ChildResult{applied("a", true), applied("b", true)}}},
			want: map[string]string{status.Ready: "True Reconciled: all 2 children ready"},
		},
		"ready, one child": {
			out:  outcome{result: &graph.Result{Ready: true, Children: []graph.ChildResult{applied("a", true)}}},
			want: map[string]string{status.Ready: "True Reconciled: the child is ready"},
		},
		"ready, no children": {
			out:  outcome{result: &graph.Result{Ready: true}},
			want: map[string]string{status.Ready: "True Reconciled: reconciled, no children"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, _ := rtReconciler(t)
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Generation: 4}}
			// Start from the opposite state so every case is a change.
			status.MarkStalled(w, "Old", "old")
			if tc.out.invalid != nil {
				status.MarkReady(w, "Old", "old")
			}
			if !r.setConditions(w, tc.out) {
				t.Error("setConditions reported no change")
			}
			got := map[string]string{}
			for _, c := range w.Status.Conditions {
				got[c.Type] = fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
				if c.ObservedGeneration != 4 {
					t.Errorf("%s observedGeneration = %d, want 4", c.Type, c.ObservedGeneration)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if r.setConditions(w, tc.out) {
				t.Error("second setConditions reported a change")
			}
		})
	}
}

func TestRecordChildren(t *testing.T) {
	r, rec := rtReconciler(t, WithName("record-children-test"))
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns"}}
	live := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	}
	g := graph.New()
	g.Add("a", live("a"))
	g.Add("b", live("b"))
	g.Add("c", live("c"))
	g.Add("d", live("d"))
	out := outcome{
		graph: g,
		result: &graph.Result{Children: []graph.ChildResult{
			{Name: "a", Object: live("a"), Operation: apply.OperationCreated, Applied: true},
			{Name: "b", Object: live("b"), Operation: apply.OperationUnchanged, Applied: true},
			{Name: "c", Operation: apply.OperationRecreated, Applied: true}, // recreated, old one still going
			{Name: "d"}, // waiting: no operation
		}},
		pruned: []client.Object{live("old")},
	}
	ops := []apply.Operation{apply.OperationCreated, apply.OperationUnchanged, apply.OperationRecreated, apply.OperationDeleted, apply.OperationUpdated}
	before := map[string]float64{}
	for _, op := range ops {
		before[string(op)] = childOperations(t, "record-children-test", "ConfigMap", op)
	}
	r.recordChildren(t.Context(), owner, out)
	want := []string{"Normal ChildrenApplied created ConfigMap ns/a; recreated ConfigMap ns/c; pruned ConfigMap ns/old"}
	if diff := cmp.Diff(want, drain(rec)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// Nothing changed: no event.
	r.recordChildren(t.Context(), owner, outcome{graph: g, result: &graph.Result{Children: []graph.ChildResult{
		{Name: "b", Object: live("b"), Operation: apply.OperationUnchanged, Applied: true},
	}}})
	if got := drain(rec); len(got) != 0 {
		t.Errorf("events for an unchanged child: %v", got)
	}
	counts := map[string]float64{}
	for _, op := range ops {
		counts[string(op)] = childOperations(t, "record-children-test", "ConfigMap", op) - before[string(op)]
	}
	wantCounts := map[string]float64{"Created": 1, "Unchanged": 2, "Recreated": 1, "Deleted": 1, "Updated": 0}
	if diff := cmp.Diff(wantCounts, counts); diff != "" {
		t.Errorf("convergo_child_operations_total (-want +got):\n%s", diff)
	}
}

// TestChildrenAppliedPolicy: by default only a reconcile that recreated or pruned children emits
// ChildrenApplied; WithChangeEvents adds the ones that only created or updated children.
func TestChildrenAppliedPolicy(t *testing.T) {
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns"}}
	live := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	}
	applied := func(ops ...apply.Operation) []graph.ChildResult {
		var out []graph.ChildResult
		for i, op := range ops {
			name := fmt.Sprintf("c%d", i)
			out = append(out, graph.ChildResult{Name: name, Object: live(name), Operation: op, Applied: true})
		}
		return out
	}
	cases := map[string]struct {
		opts     []ReconcilerOption
		children []graph.ChildResult
		pruned   []client.Object
		want     []string
	}{
		"created, by default": {
			children: applied(apply.OperationCreated, apply.OperationCreated),
		},
		"updated, by default": {
			children: applied(apply.OperationUpdated, apply.OperationUnchanged),
		},
		"created, with change events": {
			opts:     []ReconcilerOption{WithChangeEvents()},
			children: applied(apply.OperationCreated, apply.OperationCreated),
			want:     []string{"Normal ChildrenApplied created ConfigMap ns/c0, ConfigMap ns/c1"},
		},
		"updated, with change events": {
			opts:     []ReconcilerOption{WithChangeEvents()},
			children: applied(apply.OperationUnchanged, apply.OperationUpdated),
			want:     []string{"Normal ChildrenApplied updated ConfigMap ns/c1"},
		},
		"recreated, by default": {
			children: applied(apply.OperationCreated, apply.OperationRecreated),
			want:     []string{"Normal ChildrenApplied created ConfigMap ns/c0; recreated ConfigMap ns/c1"},
		},
		"pruned, by default": {
			children: applied(apply.OperationUnchanged),
			pruned:   []client.Object{live("old")},
			want:     []string{"Normal ChildrenApplied pruned ConfigMap ns/old"},
		},
		"unchanged, with change events": {
			opts:     []ReconcilerOption{WithChangeEvents()},
			children: applied(apply.OperationUnchanged),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, rec := rtReconciler(t, append([]ReconcilerOption{WithName("children-applied-policy-test")}, tc.opts...)...)
			r.recordChildren(t.Context(), owner, outcome{result: &graph.Result{Children: tc.children}, pruned: tc.pruned})
			if diff := cmp.Diff(tc.want, drain(rec)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRecordDeleted: every deleted child is counted in the metric; the ChildrenDeleted events, one per
// pass that deleted children, come only with WithChangeEvents.
func TestRecordDeleted(t *testing.T) {
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns"}}
	deleted := func(objs ...client.Object) []graph.ChildResult {
		var out []graph.ChildResult
		for _, o := range objs {
			out = append(out, graph.ChildResult{Object: o, Operation: apply.OperationDeleted})
		}
		return out
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	cases := map[string]struct {
		controller string // unique: the metric is process-wide
		opts       []ReconcilerOption
		want       []string
	}{
		"default: no event": {controller: "record-deleted-default"},
		"WithChangeEvents: one per pass": {
			controller: "record-deleted-change-events",
			opts:       []ReconcilerOption{WithChangeEvents()},
			want: []string{
				"Normal ChildrenDeleted deleted Service ns/web",
				"Normal ChildrenDeleted deleted ConfigMap ns/web, Secret ns/web",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, rec := rtReconciler(t, append([]ReconcilerOption{WithName(tc.controller)}, tc.opts...)...)
			before := childOperations(t, tc.controller, "ConfigMap", apply.OperationDeleted)
			r.recordDeleted(owner, deleted(svc))
			r.recordDeleted(owner, nil) // a pass that only waits: no event
			r.recordDeleted(owner, deleted(cm, secret))
			if diff := cmp.Diff(tc.want, drain(rec)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if got := childOperations(t, tc.controller, "ConfigMap", apply.OperationDeleted) - before; got != 1 {
				t.Errorf("convergo_child_operations_total{kind=ConfigMap,operation=Deleted} grew by %v, want 1", got)
			}
		})
	}
}

func TestCompactNote(t *testing.T) {
	many := func(n int) []noteEntry {
		var out []noteEntry
		for i := range n {
			out = append(out, noteEntry{verb: "created", what: fmt.Sprintf("ConfigMap demo/config-%03d", i)})
		}
		return out
	}
	cases := map[string]struct {
		entries []noteEntry
		limit   int
		want    string
	}{
		"one": {entries: []noteEntry{{"created", "ConfigMap demo/alice"}}, limit: 1024, want: "created ConfigMap demo/alice"},
		"runs of verbs": {
			entries: []noteEntry{{"created", "ConfigMap demo/alice"}, {"created", "Deployment demo/alice"}, {"updated", "Service demo/alice"}, {"pruned", "Secret demo/old"}, {"pruned", "Secret demo/older"}},
			limit:   1024,
			want:    "created ConfigMap demo/alice, Deployment demo/alice; updated Service demo/alice; pruned Secret demo/old, Secret demo/older",
		},
		"exactly at the limit": {
			entries: []noteEntry{{"created", "A a"}, {"created", "B b"}},
			limit:   len("created A a, B b"),
			want:    "created A a, B b",
		},
		"one byte short": {
			entries: []noteEntry{{"created", "ConfigMap demo/alpha"}, {"created", "ConfigMap demo/bravo"}},
			limit:   len("created ConfigMap demo/alpha, ConfigMap demo/bravo") - 1,
			want:    "created ConfigMap demo/alpha and 1 more",
		},
		"truncated": {
			entries: many(3),
			limit:   len("created ConfigMap demo/config-000, ConfigMap demo/config-001 and 1 more"),
			want:    "created ConfigMap demo/config-000, ConfigMap demo/config-001 and 1 more",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := compactNote(tc.entries, tc.limit)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("note (-want +got):\n%s", diff)
			}
			if len(got) > tc.limit {
				t.Errorf("note of %d bytes, limit %d", len(got), tc.limit)
			}
		})
	}
	// Many children: bounded by the Event API's limit, with the count of the rest.
	note := compactNote(many(200), maxEventNote)
	if len(note) > maxEventNote || !strings.HasSuffix(note, " more") || !strings.HasPrefix(note, "created ConfigMap demo/config-000, ") {
		t.Errorf("note of %d bytes: ...%s", len(note), note[max(0, len(note)-40):])
	}
}

func TestEventNoteIsBounded(t *testing.T) {
	r, rec := rtReconciler(t)
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns"}}
	r.warn(owner, nil, "ReconcileError", "Reconcile", strings.Repeat("ü", 2000)+" 100%")
	got := drain(rec)
	if len(got) != 1 {
		t.Fatalf("events = %v", got)
	}
	note := strings.TrimPrefix(got[0], "Warning ReconcileError ")
	if len(note) > maxEventNote || !strings.HasSuffix(note, "...") || !strings.HasPrefix(note, "üü") {
		t.Errorf("note of %d bytes: %.20q...", len(note), note)
	}
}

func TestNewReconcilerDefaultsAndErrors(t *testing.T) {
	s := rtScheme(t)
	mgr := rtManager{client: fake.NewClientBuilder().WithScheme(s).Build(), scheme: s}
	children := func(context.Context, *testapi.Widget) (*graph.Graph, error) { return nil, nil }

	r := NewReconciler(mgr, Hooks[*testapi.Widget]{Children: children}, withEventRecorder(events.NewFakeRecorder(1)))
	if r.initErr != nil {
		t.Fatal(r.initErr)
	}
	if got := []string{r.Name(), r.Finalizer()}; !cmp.Equal(got, []string{"widget", "test.convergo.dev/finalizer"}) {
		t.Errorf("name, finalizer = %v", got)
	}
	r = NewReconciler(mgr, Hooks[*testapi.Widget]{Children: children}, WithName("gadget"), WithFinalizer("example.com/gadget"),
		WithOwns(&corev1.ConfigMap{}, &corev1.ConfigMap{}, &corev1.Secret{}), WithPollInterval(time.Second))
	if r.initErr != nil || r.Name() != "gadget" || r.Finalizer() != "example.com/gadget" || len(r.owns) != 2 || r.poll != time.Second {
		t.Errorf("options not applied: err %v name %q finalizer %q owns %d poll %v", r.initErr, r.Name(), r.Finalizer(), len(r.owns), r.poll)
	}

	errCases := map[string]struct {
		mgr      manager.Manager
		children func(context.Context, *testapi.Widget) (*graph.Graph, error)
		opts     []ReconcilerOption
		want     string
	}{
		"type not in scheme": {
			mgr: rtManager{client: mgr.client, scheme: runtime.NewScheme()}, children: children,
			want: "no kind is registered",
		},
		"nil children": {mgr: mgr, want: "Hooks.Children is nil"},
	}
	for name, tc := range errCases {
		t.Run(name, func(t *testing.T) {
			r := NewReconciler(tc.mgr, Hooks[*testapi.Widget]{Children: tc.children}, append(tc.opts, withEventRecorder(events.NewFakeRecorder(1)))...)
			if r.initErr == nil || !strings.Contains(r.initErr.Error(), tc.want) {
				t.Fatalf("init error = %v, want it to contain %q", r.initErr, tc.want)
			}
			if err := r.SetupWithManager(tc.mgr); err != r.initErr {
				t.Errorf("SetupWithManager = %v, want the init error", err)
			}
			if _, err := r.Reconcile(t.Context(), ctrlRequest("ns", "w")); err != r.initErr {
				t.Errorf("Reconcile = %v, want the init error", err)
			}
		})
	}
}

func TestReconcilerPassesOptionsOn(t *testing.T) {
	type settings struct {
		Workers, DeletionPlaces int
		FieldManager            string
	}
	cases := map[string]struct {
		opts    []ReconcilerOption
		manager config.Controller
		want    settings
	}{
		"defaults": {
			opts: []ReconcilerOption{WithName("plain")},
			want: settings{Workers: 4, DeletionPlaces: 20, FieldManager: "plain"},
		},
		"the manager's workers": {
			opts:    []ReconcilerOption{WithName("plain")},
			manager: config.Controller{MaxConcurrentReconciles: 2},
			want:    settings{Workers: 2, DeletionPlaces: 20, FieldManager: "plain"},
		},
		"the manager's workers for the kind": {
			opts:    []ReconcilerOption{WithName("plain")},
			manager: config.Controller{MaxConcurrentReconciles: 2, GroupKindConcurrency: map[string]int{"Widget.test.convergo.dev": 3}},
			want:    settings{Workers: 3, DeletionPlaces: 20, FieldManager: "plain"},
		},
		"given": {
			opts: []ReconcilerOption{WithName("tuned"), WithControllerOptions(func(o *controller.Options) { o.MaxConcurrentReconciles = 8 }), WithDeletionConcurrency(0),
				WithApplierOptions(apply.WithFieldManager("custom"))},
			manager: config.Controller{MaxConcurrentReconciles: 2},
			want:    settings{Workers: 8, DeletionPlaces: 0, FieldManager: "custom"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, _ := rtReconciler(t, tc.opts...)
			got := settings{Workers: r.concurrency(rtManager{ctrl: tc.manager}), DeletionPlaces: r.deletionConc, FieldManager: r.applier.FieldManager()}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
		})
	}
}

// rtOther is another Object type, to pass hooks for the wrong type.
type rtOther struct{ testapi.Widget }

func ctrlRequest(namespace, name string) ctrl.Request {
	return ctrl.Request{NamespacedName: client.ObjectKey{Namespace: namespace, Name: name}}
}

// childOperations reads convergo_child_operations_total for a controller, kind and operation. The
// metric is process-wide: tests compare readings before and after, so that they also pass with -count.
func childOperations(t *testing.T, controller, kind string, op apply.Operation) float64 {
	t.Helper()
	m := &dto.Metric{}
	if err := childOperationsTotal.WithLabelValues(controller, kind, string(op)).Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestTypesToPrune checks which child types a reconcile prunes when nothing is counted yet (no
// controller watches): the owned types, then the declared types not owned, each as an empty object
// of its own, never a declared child itself.
func TestTypesToPrune(t *testing.T) {
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", UID: "uid-1"}}
	graph := func() *graph.Graph {
		g := graph.New()
		g.Add("page", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "page", Namespace: "ns"}})
		g.Add("secret", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secret", Namespace: "ns"}})
		g.Add("other-page", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "ns"}})
		return g
	}
	cases := map[string]struct {
		opts []ReconcilerOption
		want []string
	}{
		"nothing owned: each declared type once, in declaration order": {want: []string{"*v1.ConfigMap", "*v1.Secret"}},
		"an owned type first, then the declared ones not owned": {
			opts: []ReconcilerOption{WithOwns(&corev1.Secret{})},
			want: []string{"*v1.Secret", "*v1.ConfigMap"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, _ := rtReconciler(t, tc.opts...)
			var got []string
			for _, typ := range r.typesToPrune(owner, graph()) {
				got = append(got, fmt.Sprintf("%T", typ))
				if typ.GetName() != "" {
					t.Errorf("a declared child given as a type to prune: %T %q", typ, typ.GetName())
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("types to prune (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFailureReason: a failed node's step names the condition reason, whether the NodeError is
// wrapped or joined with others; any other error is a ReconcileError.
func TestFailureReason(t *testing.T) {
	node := func(step string) error {
		return &graph.NodeError{Node: "db", Step: step, Err: errors.New(`external node "db": ` + step + ": refused")}
	}
	cases := map[string]struct {
		err  error
		want string
	}{
		"observe":                              {err: node(graph.StepObserve), want: reasonObserveFailed},
		"apply, wrapped":                       {err: fmt.Errorf("graph: %w", node(graph.StepApply)), want: reasonApplyFailed},
		"delete, joined":                       {err: errors.Join(errors.New("other"), node(graph.StepDelete)), want: reasonDeleteFailed},
		"no node":                              {err: errors.New("status patch refused"), want: reasonReconcileError},
		"an orphan child":                      {err: &graph.NodeError{Node: "config", Step: graph.StepApply, Err: &apply.OrphanError{}}, want: reasonNotOwned},
		"another owner's":                      {err: fmt.Errorf("apply: %w", &ownership.AlreadyOwnedError{}), want: reasonNotOwned},
		"an external object not ours, wrapped": {err: fmt.Errorf("external node: %w", graph.ErrNotOwned), want: reasonNotOwned},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, failureReason(tc.err)); diff != "" {
				t.Errorf("reason (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReasonsDocumented: every condition and event reason the Reconciler writes is listed in the
// package documentation, the only place authors find them.
func TestReasonsDocumented(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	reasons := []string{reasonReconciled, reasonWaitingForDependencies, reasonProgressing, reasonReconcileError,
		reasonObserveFailed, reasonApplyFailed, reasonDeleteFailed, reasonInvalidSpec, reasonInvalidGraph,
		reasonDeleting, reasonDeletionFailed, reasonNotOwned, reasonTerminalError, eventChildrenApplied, eventChildrenDeleted}
	var missing []string
	for _, r := range reasons {
		if !regexp.MustCompile(`(?m)^//\s+(- )?(\w+, )*`+r+`\b`).Match(doc) && !strings.Contains(string(doc), " "+r+" (") && !strings.Contains(string(doc), ". "+r+":") {
			missing = append(missing, r)
		}
	}
	if diff := cmp.Diff([]string(nil), missing); diff != "" {
		t.Errorf("reasons missing from doc.go (-want +got):\n%s", diff)
	}
}
