package reconcile_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/reconcile/internal/applytest"
	"github.com/convergo-dev/convergo/status"
)

// directEnv is a fake API server holding one Widget, and a Reconciler made by NewDirect for it, whose
// Widget's spec.data["suspend"]="true" suspends it (Hooks.Suspended) and spec.data["fail"] makes the
// children hook fail with that text.
type directEnv struct {
	c      client.Client
	r      *reconcile.Reconciler[*testapi.Widget]
	key    client.ObjectKey
	failed []string // errors Hooks.Failed saw
}

func newDirectEnv(t *testing.T) *directEnv {
	t.Helper()
	s := runtime.NewScheme()
	if err := testapi.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(testapi.GroupVersion.WithKind("Widget"), meta.RESTScopeNamespace)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", UID: "uid-w", Generation: 1}}
	c := fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).WithStatusSubresource(w).WithObjects(w).
		WithInterceptorFuncs(interceptor.Funcs{Patch: applytest.GuardedPatch}).Build()
	e := &directEnv{c: c, key: client.ObjectKeyFromObject(w)}
	hooks := reconcile.Hooks[*testapi.Widget]{
		Children: func(_ context.Context, w *testapi.Widget) (*graph.Graph, error) {
			if msg := w.Spec.Data["fail"]; msg != "" {
				return nil, errors.New(msg)
			}
			g := graph.New()
			g.Add("config", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.Name}, Data: map[string]string{"k": "v"}})
			return g, nil
		},
		Suspended: func(w *testapi.Widget) bool { return w.Spec.Data["suspend"] == "true" },
		Failed: func(_ context.Context, w *testapi.Widget, err error) {
			e.failed = append(e.failed, err.Error())
			status.Set(w, metav1.Condition{Type: "Degraded", Status: metav1.ConditionTrue, Reason: "ChildrenFailed", Message: err.Error()})
		},
	}
	e.r = reconcile.NewDirect(c, c, s, hooks)
	return e
}

// reconcile runs one reconcile after setting the Widget's spec.data.
func (e *directEnv) reconcile(t *testing.T, data map[string]string) *testapi.Widget {
	t.Helper()
	var w testapi.Widget
	if err := e.c.Get(t.Context(), e.key, &w); err != nil {
		t.Fatal(err)
	}
	w.Spec.Data = data
	w.Generation++
	if err := e.c.Update(t.Context(), &w); err != nil {
		t.Fatal(err)
	}
	if _, err := e.r.Reconcile(t.Context(), ctrl.Request{NamespacedName: e.key}); err != nil && data["fail"] == "" {
		t.Fatalf("reconcile: %v", err)
	}
	if err := e.c.Get(t.Context(), e.key, &w); err != nil {
		t.Fatal(err)
	}
	return &w
}

// conditions returns "Type=Status/Reason" of each condition of w.
func conditions(w *testapi.Widget) []string {
	var out []string
	for _, c := range w.Status.Conditions {
		out = append(out, c.Type+"="+string(c.Status)+"/"+c.Reason)
	}
	return out
}

// kstatusOf is what kstatus (cli-utils, as kubectl wait, Flux and Argo CD health checks use it) reads
// of w.
func kstatusOf(t *testing.T, w *testapi.Widget) kstatus.Status {
	t.Helper()
	w = w.DeepCopy()
	w.SetGroupVersionKind(testapi.GroupVersion.WithKind("Widget"))
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w)
	if err != nil {
		t.Fatal(err)
	}
	res, err := kstatus.Compute(&unstructured.Unstructured{Object: u})
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

// TestNewDirectSuspension: a Reconciler made by NewDirect reconciles a Widget by direct calls, as a
// kubebuilder test does. Hooks.Suspended suspends it: nothing is applied or reverted, and kstatus reads a
// suspended Widget that was Ready as Current (waits on it end) and one that never was as InProgress,
// never Failed; resuming converges.
func TestNewDirectSuspension(t *testing.T) {
	type step struct {
		Conditions []string
		KStatus    kstatus.Status
		Child      string // the ConfigMap's data["k"], "" when absent
	}
	cases := map[string]struct {
		steps []map[string]string // spec.data of each reconcile
		want  []step
	}{
		"suspended from the start": {
			steps: []map[string]string{{"suspend": "true"}, nil},
			want: []step{
				{Conditions: []string{"Suspended=True/Suspended", "Ready=False/Suspended"}, KStatus: kstatus.InProgressStatus},
				{Conditions: []string{"Ready=True/Reconciled"}, KStatus: kstatus.CurrentStatus, Child: "v"},
			},
		},
		"spec changed while suspended": {
			steps: []map[string]string{nil, {"suspend": "true"}, {"suspend": "true", "other": "x"}, {"other": "x"}},
			want: []step{
				{Conditions: []string{"Ready=True/Reconciled"}, KStatus: kstatus.CurrentStatus, Child: "v"},
				{Conditions: []string{"Ready=True/Reconciled", "Suspended=True/Suspended"}, KStatus: kstatus.CurrentStatus, Child: "hand-edited"},
				// The new spec is not applied: observedGeneration stays, so kstatus waits.
				{Conditions: []string{"Ready=True/Reconciled", "Suspended=True/Suspended"}, KStatus: kstatus.InProgressStatus, Child: "hand-edited"},
				{Conditions: []string{"Ready=True/Reconciled"}, KStatus: kstatus.CurrentStatus, Child: "v"},
			},
		},
		"ready, then suspended, then resumed": {
			steps: []map[string]string{nil, {"suspend": "true"}, nil},
			want: []step{
				{Conditions: []string{"Ready=True/Reconciled"}, KStatus: kstatus.CurrentStatus, Child: "v"},
				{Conditions: []string{"Ready=True/Reconciled", "Suspended=True/Suspended"}, KStatus: kstatus.CurrentStatus, Child: "hand-edited"},
				{Conditions: []string{"Ready=True/Reconciled"}, KStatus: kstatus.CurrentStatus, Child: "v"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newDirectEnv(t)
			var got []step
			for _, data := range tc.steps {
				w := e.reconcile(t, data)
				s := step{Conditions: conditions(w), KStatus: kstatusOf(t, w)}
				var cm corev1.ConfigMap
				if err := e.c.Get(t.Context(), e.key, &cm); err == nil {
					s.Child = cm.Data["k"]
					// A hand edit: reverted unless the Widget is suspended.
					cm.Data["k"] = "hand-edited"
					if err := e.c.Update(t.Context(), &cm); err != nil {
						t.Fatal(err)
					}
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("reconciles (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFailedHook: Hooks.Failed sees what failed and its conditions are written with the Reconciler's.
func TestFailedHook(t *testing.T) {
	e := newDirectEnv(t)
	w := e.reconcile(t, map[string]string{"fail": "no quota"})
	if diff := cmp.Diff([]string{"build children: no quota"}, e.failed); diff != "" {
		t.Errorf("errors Hooks.Failed saw (-want +got):\n%s", diff)
	}
	want := []string{"Degraded=True/ChildrenFailed", "Reconciling=True/ReconcileError", "Ready=False/ReconcileError"}
	if diff := cmp.Diff(want, conditions(w)); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
}

// TestTimeInTheContract: a hook's RequeueAfter brings the next look forward, WithInterval looks at a
// converged object again (jittered, never later than the interval), and controller-runtime's
// TerminalError from a hook stalls the object and is returned as terminal (no retry, counted by
// controller-runtime's terminal-error metric), as an invalid spec is.
func TestTimeInTheContract(t *testing.T) {
	type got struct {
		RequeueAfter string
		Terminal     bool
		Stalled      string
	}
	cases := map[string]struct {
		opts []reconcile.ReconcilerOption
		data map[string]string
		want got
	}{
		"nothing asked": {want: got{RequeueAfter: "0s"}},
		"a hook asks":   {data: map[string]string{"requeue": "90s"}, want: got{RequeueAfter: "1m30s"}},
		"an interval":   {opts: []reconcile.ReconcilerOption{reconcile.WithInterval(10 * time.Minute)}, want: got{RequeueAfter: "within 10m"}},
		"a hook asks sooner than the interval": {opts: []reconcile.ReconcilerOption{reconcile.WithInterval(10 * time.Minute)},
			data: map[string]string{"requeue": "90s"}, want: got{RequeueAfter: "1m30s"}},
		"a hook asks, then fails": {data: map[string]string{"requeue": "90s", "fail": "database unreachable"},
			want: got{RequeueAfter: "1m30s"}},
		"the failure hook asks": {data: map[string]string{"fail": "database unreachable", "failed-requeue": "45s"},
			want: got{RequeueAfter: "45s"}},
		"a hook asks, then fails terminally": {data: map[string]string{"requeue": "90s", "terminal": "quota exhausted"},
			want: got{RequeueAfter: "0s", Terminal: true, Stalled: "True/TerminalError"}},
		"a terminal error": {data: map[string]string{"terminal": "quota exhausted"},
			want: got{RequeueAfter: "0s", Terminal: true, Stalled: "True/TerminalError"}},
		"an invalid spec": {data: map[string]string{"invalid": "size too large"},
			want: got{RequeueAfter: "0s", Terminal: true, Stalled: "True/InvalidSpec"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newTimedEnv(t, tc.opts...)
			res, err := e.reconcileWith(t, tc.data)
			g := got{RequeueAfter: res.RequeueAfter.String(), Terminal: errors.Is(err, ctrlreconcile.TerminalError(nil))}
			if tc.opts != nil && res.RequeueAfter > 9*time.Minute && res.RequeueAfter <= 10*time.Minute {
				g.RequeueAfter = "within 10m"
			}
			var w testapi.Widget
			if err := e.c.Get(t.Context(), e.key, &w); err != nil {
				t.Fatal(err)
			}
			if c := meta.FindStatusCondition(w.GetConditions(), status.Stalled); c != nil {
				g.Stalled = string(c.Status) + "/" + c.Reason
			}
			if err != nil && !g.Terminal {
				t.Fatalf("reconcile: %v", err)
			}
			if diff := cmp.Diff(tc.want, g); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// newTimedEnv is newDirectEnv whose children hook reads spec.data: "requeue" (a duration it asks for
// with RequeueAfter), "fail" (a transient error's text), "terminal" (a TerminalError's text) and
// "invalid" (an Invalid's); its Failed hook asks for "failed-requeue" (a duration) with RequeueAfter.
func newTimedEnv(t *testing.T, opts ...reconcile.ReconcilerOption) *directEnv {
	t.Helper()
	e := newDirectEnv(t)
	e.r = reconcile.NewDirect(e.c, e.c, e.c.Scheme(), reconcile.Hooks[*testapi.Widget]{
		Children: func(ctx context.Context, w *testapi.Widget) (*graph.Graph, error) {
			if d, err := time.ParseDuration(w.Spec.Data["requeue"]); err == nil {
				reconcile.RequeueAfter(ctx, d)
			}
			if msg := w.Spec.Data["terminal"]; msg != "" {
				return nil, ctrlreconcile.TerminalError(errors.New(msg))
			}
			if msg := w.Spec.Data["fail"]; msg != "" {
				return nil, errors.New(msg)
			}
			if msg := w.Spec.Data["invalid"]; msg != "" {
				return nil, reconcile.Invalid("%s", msg)
			}
			return graph.New(), nil
		},
		Failed: func(ctx context.Context, w *testapi.Widget, _ error) {
			if d, err := time.ParseDuration(w.Spec.Data["failed-requeue"]); err == nil {
				reconcile.RequeueAfter(ctx, d)
			}
		},
	}, opts...)
	return e
}

// reconcileWith sets the Widget's spec.data and reconciles it once.
func (e *directEnv) reconcileWith(t *testing.T, data map[string]string) (ctrl.Result, error) {
	t.Helper()
	var w testapi.Widget
	if err := e.c.Get(t.Context(), e.key, &w); err != nil {
		t.Fatal(err)
	}
	w.Spec.Data = data
	if err := e.c.Update(t.Context(), &w); err != nil {
		t.Fatal(err)
	}
	return e.r.Reconcile(t.Context(), ctrl.Request{NamespacedName: e.key})
}

// TestWithConditions: conditions the Status hook sets feed Ready, each with its declared polarity;
// Ready=True only when the children are ready and every one of them is good, and a reconcile that
// changes nothing writes nothing (Ready set twice keeps its transition time).
func TestWithConditions(t *testing.T) {
	cases := map[string]struct {
		data map[string]string // "valid" and "degraded": the statuses the Status hook sets
		want []string
	}{
		"all good":              {data: map[string]string{"valid": "True", "degraded": "False"}, want: []string{"CredentialsValid=True/Checked", "Degraded=False/Checked", "Ready=True/Reconciled"}},
		"positive one is bad":   {data: map[string]string{"valid": "False", "degraded": "False"}, want: []string{"CredentialsValid=False/Checked", "Degraded=False/Checked", "Ready=False/Checked"}},
		"negative one is bad":   {data: map[string]string{"valid": "True", "degraded": "True"}, want: []string{"CredentialsValid=True/Checked", "Degraded=True/Checked", "Ready=False/Checked"}},
		"positive not reported": {data: map[string]string{"degraded": "False"}, want: []string{"Degraded=False/Checked", "Ready=Unknown/CredentialsValidNotReported"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newDirectEnv(t)
			e.r = reconcile.NewDirect(e.c, e.c, e.c.Scheme(), reconcile.Hooks[*testapi.Widget]{
				Children: func(context.Context, *testapi.Widget) (*graph.Graph, error) { return graph.New(), nil },
				Status: func(_ context.Context, w *testapi.Widget, _ *graph.Result) error {
					for key, typ := range map[string]string{"valid": "CredentialsValid", "degraded": "Degraded"} {
						if s := w.Spec.Data[key]; s != "" {
							status.Set(w, metav1.Condition{Type: typ, Status: metav1.ConditionStatus(s), Reason: "Checked"})
						}
					}
					return nil
				},
			}, reconcile.WithConditions(status.Summary{Conditions: []string{"CredentialsValid"}, NegativePolarity: []string{"Degraded"}}))
			w := e.reconcile(t, tc.data)
			// conditions are sorted by type for the comparison: the hook sets them in map order
			got := conditions(w)
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.want))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			rv := w.ResourceVersion
			if _, err := e.r.Reconcile(t.Context(), ctrl.Request{NamespacedName: e.key}); err != nil {
				t.Fatal(err)
			}
			if err := e.c.Get(t.Context(), e.key, w); err != nil {
				t.Fatal(err)
			}
			if w.ResourceVersion != rv {
				t.Errorf("a reconcile that changes nothing wrote the status: resourceVersion %s -> %s", rv, w.ResourceVersion)
			}
		})
	}
}

// memThings is an in-memory external system for the Reconciler's tests: things by name with their
// owner mark; down makes every call fail.
type memThings struct {
	owner map[string]string
	down  error
}

func (m *memThings) Kind() string { return "mem.thing" }

func (m *memThings) Observe(_ context.Context, id, _ string) (graph.Observation, error) {
	if m.down != nil {
		return graph.Observation{}, m.down
	}
	o, ok := m.owner[id]
	return graph.Observation{Exists: ok, Owner: o, UpToDate: ok, Ready: ok}, nil
}

func (m *memThings) Apply(_ context.Context, id, _ string, _ graph.Observation, owner string) error {
	if m.down != nil {
		return m.down
	}
	m.owner[id] = owner
	return nil
}

func (m *memThings) Delete(_ context.Context, id string) error {
	if m.down != nil {
		return m.down
	}
	delete(m.owner, id)
	return nil
}

// TestReconcilerExternalNode: an external node is created, the object is looked at again within the
// node's interval (no watch event comes from outside the cluster), an unreachable system makes the
// object Reconciling with the node and the error named, and a deletion keeps the finalizer until the
// external object is gone.
func TestReconcilerExternalNode(t *testing.T) {
	e := newDirectEnv(t)
	things := &memThings{owner: map[string]string{}}
	e.r = reconcile.NewDirect(e.c, e.c, e.c.Scheme(), reconcile.Hooks[*testapi.Widget]{
		Children: func(_ context.Context, w *testapi.Widget) (*graph.Graph, error) {
			g := graph.New()
			graph.AddExternal(g, "db", things, w.Name+"-db", "v1").ObserveEvery(5 * time.Minute)
			return g, nil
		},
	})
	reconcileOnce := func() (ctrl.Result, error, *testapi.Widget) {
		res, err := e.r.Reconcile(t.Context(), ctrl.Request{NamespacedName: e.key})
		var w testapi.Widget
		if err := e.c.Get(t.Context(), e.key, &w); err != nil {
			t.Fatal(err)
		}
		return res, err, &w
	}
	res, err, w := reconcileOnce()
	if err != nil {
		t.Fatal(err)
	}
	if things.owner["w-db"] != "uid-w" || !status.IsReady(w) {
		t.Errorf("after the first reconcile: things %v, conditions %v", things.owner, conditions(w))
	}
	if res.RequeueAfter <= 4*time.Minute || res.RequeueAfter > 5*time.Minute {
		t.Errorf("RequeueAfter = %v, want within the node's interval of 5m", res.RequeueAfter)
	}

	things.down = errors.New("connection refused")
	if _, err, w = reconcileOnce(); err == nil {
		t.Error("reconcile while the system is down returned no error (no retry with backoff)")
	}
	if c := meta.FindStatusCondition(w.GetConditions(), status.Reconciling); c == nil || c.Reason != "ObserveFailed" ||
		!strings.Contains(c.Message, `external node "db" (mem.thing w-db): observe: connection refused`) {
		t.Errorf("Reconciling while down = %+v", c)
	}

	if err := e.c.Delete(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	if _, err, w = reconcileOnce(); err == nil || len(w.Finalizers) == 0 {
		t.Errorf("deletion while the system is down: err %v, finalizers %v: want an error and the finalizer kept", err, w.Finalizers)
	}
	things.down = nil
	if _, err := e.r.Reconcile(t.Context(), ctrl.Request{NamespacedName: e.key}); err != nil {
		t.Fatal(err)
	}
	if _, ok := things.owner["w-db"]; ok {
		t.Error("the external object outlived its owner")
	}
	if err := e.c.Get(t.Context(), e.key, &testapi.Widget{}); !apierrors.IsNotFound(err) {
		t.Errorf("the owner is not gone once the external object is: %v", err)
	}
}

// TestReconcilerExternalTerminalError: an External that answers controller-runtime's TerminalError
// stalls the object, naming the node, and the reconcile is returned terminal (no retry).
func TestReconcilerExternalTerminalError(t *testing.T) {
	e := newDirectEnv(t)
	things := &memThings{owner: map[string]string{}, down: ctrlreconcile.TerminalError(errors.New("quota exhausted"))}
	e.r = reconcile.NewDirect(e.c, e.c, e.c.Scheme(), reconcile.Hooks[*testapi.Widget]{
		Children: func(_ context.Context, w *testapi.Widget) (*graph.Graph, error) {
			g := graph.New()
			graph.AddExternal(g, "db", things, w.Name+"-db", "v1")
			return g, nil
		},
	})
	_, err := e.r.Reconcile(t.Context(), ctrl.Request{NamespacedName: e.key})
	if !errors.Is(err, ctrlreconcile.TerminalError(nil)) {
		t.Errorf("reconcile error = %v, want a terminal error", err)
	}
	var w testapi.Widget
	if err := e.c.Get(t.Context(), e.key, &w); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(w.GetConditions(), status.Stalled); c == nil || c.Reason != "TerminalError" ||
		!strings.Contains(c.Message, `external node "db" (mem.thing w-db): observe: terminal error: quota exhausted`) {
		t.Errorf("Stalled = %+v", c)
	}
}
