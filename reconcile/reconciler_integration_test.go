//go:build integration

package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/convergo-dev/convergo/finalizer"
	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/harness"
)

// The Reconciler tests install the Widget CRD themselves (the package's TestMain is shared with the
// Applier tests) and use a scheme that knows Widgets.
var (
	widgetSetupOnce sync.Once
	widgetScheme    *runtime.Scheme
	widgetSetupErr  error
	widgetRuns      atomic.Int64
)

// widgetTest is one Reconciler test: a namespace, a client knowing Widgets, and a running manager
// whose API requests are counted.
type widgetTest struct {
	env     *harness.Env
	ns      string
	client  client.Client
	counter *harness.RequestCounter
	rec     *reconcile.Reconciler[*testapi.Widget]
	mgr     manager.Manager
	name    string
	calls   atomic.Int64 // Children calls
}

// widgetHoldFinalizer lets a test keep a child in Terminating.
const widgetHoldFinalizer = "test.convergo.dev/hold"

// widgetChildren declares config -> derived: a ConfigMap with the Widget's data, and a second one that
// depends on it and is applied only once the first carries the annotation ready=true (set by the test;
// with spec.data.edge=creation only its creation waits); plus an optional third one while
// spec.data.extra is set.
func widgetChildren(calls *atomic.Int64) func(context.Context, *testapi.Widget) (*graph.Graph, error) {
	return func(ctx context.Context, w *testapi.Widget) (*graph.Graph, error) {
		calls.Add(1)
		if w.Spec.Invalid != "" {
			return nil, reconcile.Invalid("spec.invalid is set: %s", w.Spec.Invalid)
		}
		g := graph.New()
		g.Add("config", &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: w.Name + "-config"},
			Data:       w.Spec.Data,
		}).ReadyWhen(func(live client.Object) (bool, string) {
			if live.GetAnnotations()["ready"] == "true" {
				return true, ""
			}
			return false, "not annotated ready=true"
		})
		derived := g.Add("derived", &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: w.Name + "-derived"},
			Data:       map[string]string{"replicas": fmt.Sprint(w.Spec.Replicas)},
		})
		if w.Spec.Data["edge"] == "creation" {
			derived.DependsOnForCreation("config")
		} else {
			derived.DependsOn("config")
		}
		if extra := w.Spec.Data["extra"]; extra != "" {
			n := g.Add("extra", &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: w.Name + "-extra"},
				Data:       map[string]string{"extra": extra},
			})
			if w.Spec.Data["keep-extra"] == "true" {
				n.KeepOnDelete()
			}
		}
		return g, nil
	}
}

// setupWidgets installs the Widget CRD (once) and returns a client that knows Widgets.
func setupWidgets(t *testing.T, env *harness.Env) client.Client {
	t.Helper()
	widgetSetupOnce.Do(func() {
		_, widgetSetupErr = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{testapi.CRDDir()}})
		if widgetSetupErr == nil {
			widgetScheme, widgetSetupErr = harness.NewScheme(testapi.AddToScheme)
		}
	})
	if widgetSetupErr != nil {
		t.Fatal(widgetSetupErr)
	}
	c, err := client.New(env.Config, client.Options{Scheme: widgetScheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newWidgetTest(t *testing.T, opts ...reconcile.ReconcilerOption) *widgetTest {
	t.Helper()
	return newWidgetTestWith(t, reconcile.Hooks[*testapi.Widget]{}, opts...)
}

// newWidgetTestWith is newWidgetTest with the Status and Cleanup hooks of hooks (Children is always
// widgetChildren).
func newWidgetTestWith(t *testing.T, hooks reconcile.Hooks[*testapi.Widget], opts ...reconcile.ReconcilerOption) *widgetTest {
	t.Helper()
	return newObservedWidgetTest(t, hooks, nil, opts...)
}

// newObservedWidgetTest is newWidgetTestWith with observe (if not nil) told of every reconcile, through
// the manager's BaseContext (reconcile.ContextWithObserver).
func newObservedWidgetTest(t *testing.T, hooks reconcile.Hooks[*testapi.Widget], observe func(context.Context, ctrl.Request) func(ctrl.Result, error), opts ...reconcile.ReconcilerOption) *widgetTest {
	t.Helper()
	env := harness.Default()
	c := setupWidgets(t, env)
	wt := &widgetTest{
		env: env, ns: env.Namespace(t), client: c, counter: harness.NewRequestCounter(),
		name: "widget-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())),
	}
	if len(wt.name) > 55 {
		wt.name = wt.name[:55]
	}
	// Unique per run, so metrics (process-wide) and events of repeated runs (-count) do not add up.
	wt.name = fmt.Sprintf("%s-%d", wt.name, widgetRuns.Add(1))
	opts = append([]reconcile.ReconcilerOption{
		reconcile.WithName(wt.name),
		reconcile.WithOwns(&corev1.ConfigMap{}),
		reconcile.WithPollInterval(200 * time.Millisecond),
	}, opts...)
	env.StartManager(t, func(mgr manager.Manager) error {
		hooks.Children = widgetChildren(&wt.calls)
		wt.mgr = mgr
		wt.rec = reconcile.NewReconciler(mgr, hooks, opts...)
		return wt.rec.SetupWithManager(mgr)
	}, harness.WithManagerConfig(wt.counter.Wrap(env.Config)), harness.WithManagerOptions(func(o *manager.Options) {
		o.Scheme = widgetScheme
		// Only the test's namespace: Widgets other tests left behind (their namespaces still being
		// terminated) would take this controller's workers.
		o.Cache.DefaultNamespaces = map[string]cache.Config{wt.ns: {}}
		if observe != nil {
			o.BaseContext = func() context.Context { return reconcile.ContextWithObserver(context.Background(), observe) }
		}
	}))
	return wt
}

func (wt *widgetTest) create(t *testing.T, name string, spec testapi.WidgetSpec) *testapi.Widget {
	t.Helper()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: wt.ns}, Spec: spec}
	if err := wt.client.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

func (wt *widgetTest) waitWidget(t *testing.T, w *testapi.Widget, what string, cond func(*testapi.Widget) bool) *testapi.Widget {
	t.Helper()
	got := &testapi.Widget{}
	t.Logf("waiting for %s", what)
	harness.WaitForObject(t, wt.client, client.ObjectKeyFromObject(w), got, time.Minute, cond)
	return got
}

func (wt *widgetTest) annotateReady(t *testing.T, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: wt.ns}}
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"ready":"true"}}}`))
	if err := wt.client.Patch(t.Context(), cm, patch); err != nil {
		t.Fatal(err)
	}
}

// ownEvents returns this controller's events about the named object, oldest first.
func (wt *widgetTest) ownEvents(t *testing.T, name string) []eventsv1.Event {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := wt.client.List(t.Context(), list, client.InNamespace(wt.ns)); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
	return slices.DeleteFunc(list.Items, func(e eventsv1.Event) bool {
		return e.Regarding.Name != name || e.ReportingController != wt.name
	})
}

// events returns "Type Reason" of the events about the named object, oldest first.
func (wt *widgetTest) events(t *testing.T, name string) []string {
	t.Helper()
	var out []string
	for _, e := range wt.ownEvents(t, name) {
		out = append(out, e.Type+" "+e.Reason)
	}
	return out
}

// eventNotes returns the notes of the events of type and reason about the named object, oldest first.
func (wt *widgetTest) eventNotes(t *testing.T, name, typ, reason string) []string {
	t.Helper()
	var out []string
	for _, e := range wt.ownEvents(t, name) {
		if e.Type == typ && e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

// waitEventNotes waits until the notes of the events of type and reason about the named object are
// exactly want, in that order.
func (wt *widgetTest) waitEventNotes(t *testing.T, name, typ, reason string, want []string) {
	t.Helper()
	harness.Eventually(t, 30*time.Second, func() (bool, string) {
		got := wt.eventNotes(t, name, typ, reason)
		diff := cmp.Diff(want, got)
		return diff == "", fmt.Sprintf("%s %s events about %s (-want +got):\n%s\nall events: %v", typ, reason, name, diff, wt.events(t, name))
	})
}

func (wt *widgetTest) waitEvent(t *testing.T, name, want string) {
	t.Helper()
	harness.Eventually(t, 30*time.Second, func() (bool, string) {
		got := wt.events(t, name)
		return slices.Contains(got, want), fmt.Sprintf("events about %s: %v, want %q", name, got, want)
	})
}

// metricValue sums the samples of a metric on controller-runtime's registry whose labels include want.
func metricValue(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if !labelsInclude(m.GetLabel(), want) {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetHistogram() != nil: // the number of observations
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

func labelsInclude(labels []*dto.LabelPair, want map[string]string) bool {
	found := 0
	for _, l := range labels {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			found++
		}
	}
	return found == len(want)
}

// settledCalls waits until the manager has stopped reconciling (no Children call for half a second) and
// returns the number of calls so far.
func (wt *widgetTest) settledCalls(t *testing.T) int64 {
	t.Helper()
	last := wt.calls.Load()
	for range 20 {
		time.Sleep(500 * time.Millisecond)
		now := wt.calls.Load()
		if now == last {
			return now
		}
		last = now
	}
	t.Fatalf("the controller keeps reconciling: %d Children calls", last)
	return 0
}

func isReady(w *testapi.Widget) bool { return status.IsReady(w) }
func isStalled(w *testapi.Widget) bool {
	return meta.IsStatusConditionTrue(w.GetConditions(), status.Stalled)
}

func condition(w *testapi.Widget, t string) string {
	c := meta.FindStatusCondition(w.GetConditions(), t)
	if c == nil {
		return "absent"
	}
	return fmt.Sprintf("%s/%s", c.Status, c.Reason)
}

// TestIntegrationReconcilerConverges: a Widget with config -> derived waits on the dependency
// (Reconciling, no spinning), converges to Ready once the dependency is ready (woken by the child's
// watch event), and then reconciles with zero API requests.
func TestIntegrationReconcilerConverges(t *testing.T) {
	wt := newWidgetTest(t, reconcile.WithChangeEvents())
	w := wt.create(t, "app", testapi.WidgetSpec{Data: map[string]string{"k": "v"}, Replicas: 2})

	got := wt.waitWidget(t, w, "Reconciling/WaitingForDependencies", func(w *testapi.Widget) bool {
		return condition(w, status.Reconciling) == "True/WaitingForDependencies"
	})
	if diff := cmp.Diff([]string{wt.rec.Finalizer()}, got.Finalizers); diff != "" {
		t.Errorf("finalizers (-want +got):\n%s", diff)
	}
	if c := meta.FindStatusCondition(got.GetConditions(), status.Ready); c == nil || c.Status != metav1.ConditionFalse ||
		c.Message != "config: not annotated ready=true; derived waits for config: not annotated ready=true" {
		t.Errorf("Ready = %+v", c)
	}
	err := wt.client.Get(t.Context(), client.ObjectKey{Namespace: wt.ns, Name: "app-derived"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("derived exists before its dependency is ready (get: %v)", err)
	}

	// Waiting does not spin: with nothing changing, no further reconcile happens.
	calls := wt.settledCalls(t)
	time.Sleep(time.Second)
	if n := wt.calls.Load() - calls; n != 0 {
		t.Errorf("%d reconciles while waiting with nothing changing, want 0", n)
	}

	// The dependency becomes ready: the child's watch event wakes the owner.
	wt.annotateReady(t, "app-config")
	got = wt.waitWidget(t, w, "Ready", isReady)
	if c := meta.FindStatusCondition(got.GetConditions(), status.Ready); c.Reason != "Reconciled" || c.Message != "all 2 children ready" {
		t.Errorf("Ready = %+v", c)
	}
	if got.Status.ObservedGeneration != got.Generation || meta.FindStatusCondition(got.GetConditions(), status.Reconciling) != nil {
		t.Errorf("status = %+v", got.Status)
	}
	derived := &corev1.ConfigMap{}
	if err := wt.client.Get(t.Context(), client.ObjectKey{Namespace: wt.ns, Name: "app-derived"}, derived); err != nil {
		t.Fatal(err)
	}
	if derived.Data["replicas"] != "2" {
		t.Errorf("derived data = %v", derived.Data)
	}
	// One Normal event per reconcile that changed children: config, then (once config is ready)
	// derived; no second create while the cache catches up.
	wt.waitEventNotes(t, "app", corev1.EventTypeNormal, "ChildrenApplied", []string{
		"created ConfigMap " + wt.ns + "/app-config",
		"created ConfigMap " + wt.ns + "/app-derived",
	})
	if n := metricValue(t, "convergo_child_operations_total", map[string]string{"controller": wt.name, "kind": "ConfigMap", "operation": "Created"}); n != 2 {
		t.Errorf("convergo_child_operations_total{operation=Created} = %v, want 2", n)
	}

	// Steady state: reconciling again makes no API request at all (cache reads only).
	readyLTT := meta.FindStatusCondition(got.GetConditions(), status.Ready).LastTransitionTime
	wt.settledCalls(t) // let the manager's own reconciles of the last writes finish
	wt.counter.Reset()
	for range 5 {
		res, err := wt.rec.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)})
		if err != nil || !res.IsZero() {
			t.Fatalf("Reconcile = %+v, %v", res, err)
		}
	}
	// A label change on the Widget passes the watch predicate: the manager reconciles it too.
	before := wt.calls.Load()
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"touched":"yes"}}}`))
	if err := wt.client.Patch(t.Context(), &testapi.Widget{ObjectMeta: w.ObjectMeta}, patch); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, func() (bool, string) {
		return wt.calls.Load() > before, "waiting for the manager to reconcile the label change"
	})
	time.Sleep(200 * time.Millisecond)
	if reqs := wt.counter.Snapshot(); len(reqs) != 0 {
		t.Errorf("steady-state reconciles made %d API requests, want 0:\n%s", len(reqs), reqs)
	}
	final := &testapi.Widget{}
	if err := wt.client.Get(t.Context(), client.ObjectKeyFromObject(w), final); err != nil {
		t.Fatal(err)
	}
	if ltt := meta.FindStatusCondition(final.GetConditions(), status.Ready).LastTransitionTime; !ltt.Equal(&readyLTT) {
		t.Errorf("Ready lastTransitionTime moved from %v to %v", readyLTT, ltt)
	}

	// A spec change is applied and stamped with the new generation.
	final.Spec.Replicas = 3
	if err := wt.client.Update(t.Context(), final); err != nil {
		t.Fatal(err)
	}
	got = wt.waitWidget(t, w, "Ready at the new generation", isReady)
	if err := wt.client.Get(t.Context(), client.ObjectKeyFromObject(derived), derived); err != nil {
		t.Fatal(err)
	}
	if derived.Data["replicas"] != "3" || got.Status.ObservedGeneration != final.Generation {
		t.Errorf("derived data %v, observedGeneration %d (generation %d)", derived.Data, got.Status.ObservedGeneration, final.Generation)
	}
	wt.waitEventNotes(t, "app", corev1.EventTypeNormal, "ChildrenApplied", []string{
		"created ConfigMap " + wt.ns + "/app-config",
		"created ConfigMap " + wt.ns + "/app-derived",
		"updated ConfigMap " + wt.ns + "/app-derived",
	})
	if got := wt.events(t, "app"); slices.ContainsFunc(got, func(e string) bool {
		return strings.HasPrefix(e, "Normal ") && e != "Normal "+"ChildrenApplied"
	}) {
		t.Errorf("events about app: %v; want only Normal %s", got, "ChildrenApplied")
	}
}

// TestIntegrationReconcilerInvalidSpec: an invalid spec stalls the Widget with a Warning event and
// no requeue; fixing the spec recovers.
func TestIntegrationReconcilerInvalidSpec(t *testing.T) {
	wt := newWidgetTest(t)
	w := wt.create(t, "bad", testapi.WidgetSpec{Invalid: "replicas must be even"})

	got := wt.waitWidget(t, w, "Stalled", isStalled)
	want := map[string]string{status.Ready: "False/InvalidSpec", status.Stalled: "True/InvalidSpec", status.Reconciling: "absent"}
	gotConds := map[string]string{}
	for t := range want {
		gotConds[t] = condition(got, t)
	}
	if diff := cmp.Diff(want, gotConds); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if msg := meta.FindStatusCondition(got.GetConditions(), status.Stalled).Message; msg != "spec.invalid is set: replicas must be even" {
		t.Errorf("Stalled message = %q", msg)
	}
	wt.waitEvent(t, "bad", "Warning InvalidSpec")

	// No requeue: nothing happens until the spec changes.
	calls := wt.settledCalls(t)
	wt.counter.Reset()
	time.Sleep(time.Second)
	if n := wt.calls.Load() - calls; n != 0 {
		t.Errorf("%d reconciles of a stalled Widget with nothing changing, want 0", n)
	}
	if n := wt.counter.Snapshot().Writes(); n != 0 {
		t.Errorf("%d writes while stalled, want 0:\n%s", n, wt.counter.Snapshot())
	}

	// Fixing the spec recovers.
	got.Spec.Invalid = ""
	if err := wt.client.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	wt.annotateReadyWhenCreated(t, "bad-config")
	got = wt.waitWidget(t, w, "Ready after fixing the spec", isReady)
	if meta.FindStatusCondition(got.GetConditions(), status.Stalled) != nil {
		t.Errorf("Stalled kept after recovery: %v", got.Status.Conditions)
	}
}

func (wt *widgetTest) annotateReadyWhenCreated(t *testing.T, name string) {
	t.Helper()
	harness.WaitForObject(t, wt.client, client.ObjectKey{Namespace: wt.ns, Name: name}, &corev1.ConfigMap{}, time.Minute, nil)
	wt.annotateReady(t, name)
}

// TestIntegrationReconcilerDeletion: deletion deletes the children in reverse dependency order, then
// runs the cleanup hook until it reports done, and only then removes the finalizer. With
// WithChangeEvents each pass that deletes children emits one ChildrenDeleted event naming them, so the
// events show the order; there is no other Normal event during deletion.
func TestIntegrationReconcilerDeletion(t *testing.T) {
	var (
		mu      sync.Mutex
		cleanup []string // what each cleanup call saw
	)
	cleanupHook := func(ctx context.Context, w *testapi.Widget) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		var present []string
		for _, n := range []string{w.Name + "-config", w.Name + "-derived"} {
			if err := harness.Default().Client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: n}, &corev1.ConfigMap{}); err == nil {
				present = append(present, n)
			}
		}
		cleanup = append(cleanup, fmt.Sprintf("children present: %v", present))
		return len(cleanup) >= 2, nil // not done the first time
	}
	wt := newWidgetTestWith(t, reconcile.Hooks[*testapi.Widget]{Cleanup: cleanupHook}, reconcile.WithChangeEvents())
	w := wt.create(t, "gone", testapi.WidgetSpec{Data: map[string]string{"k": "v", "extra": "on"}})
	wt.annotateReadyWhenCreated(t, "gone-config")
	wt.waitWidget(t, w, "Ready", isReady)

	// Hold the dependent child in Terminating to observe the order.
	derived := &corev1.ConfigMap{}
	if err := wt.client.Get(t.Context(), client.ObjectKey{Namespace: wt.ns, Name: "gone-derived"}, derived); err != nil {
		t.Fatal(err)
	}
	if _, err := finalizer.Ensure(t.Context(), wt.client, derived, widgetHoldFinalizer); err != nil {
		t.Fatal(err)
	}

	if err := wt.client.Delete(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	harness.WaitForObject(t, wt.client, client.ObjectKeyFromObject(derived), derived, time.Minute,
		func(cm *corev1.ConfigMap) bool { return cm.DeletionTimestamp != nil })
	got := wt.waitWidget(t, w, "Reconciling/Deleting", func(w *testapi.Widget) bool {
		return condition(w, status.Reconciling) == "True/Deleting"
	})
	if msg := meta.FindStatusCondition(got.GetConditions(), status.Reconciling).Message; msg != "waiting for children to be deleted" {
		t.Errorf("Reconciling message = %q", msg)
	}
	config := &corev1.ConfigMap{}
	if err := wt.client.Get(t.Context(), client.ObjectKey{Namespace: wt.ns, Name: "gone-config"}, config); err != nil {
		t.Fatalf("config deleted before the child depending on it is gone: %v", err)
	}
	if config.DeletionTimestamp != nil {
		t.Error("config is being deleted while the child depending on it still exists")
	}
	if n := metricValue(t, "convergo_finalizing_objects", map[string]string{"controller": wt.name}); n != 1 {
		t.Errorf("convergo_finalizing_objects = %v, want 1", n)
	}
	mu.Lock()
	if len(cleanup) != 0 {
		t.Errorf("cleanup ran while children exist: %v", cleanup)
	}
	mu.Unlock()

	// Release the hold: derived goes, then config, then cleanup (twice), then the finalizer.
	if _, err := finalizer.Remove(t.Context(), wt.client, derived, widgetHoldFinalizer); err != nil {
		t.Fatal(err)
	}
	harness.WaitForDeletion(t, wt.client, w, time.Minute)
	mu.Lock()
	if diff := cmp.Diff([]string{"children present: []", "children present: []"}, cleanup); diff != "" {
		t.Errorf("cleanup calls (-want +got):\n%s", diff)
	}
	mu.Unlock()
	for _, n := range []string{"gone-config", "gone-derived", "gone-extra"} {
		err := wt.client.Get(t.Context(), client.ObjectKey{Namespace: wt.ns, Name: n}, &corev1.ConfigMap{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("child %s still exists after finalization (get: %v)", n, err)
		}
	}
	// derived depends on config; nothing depends on extra: derived and extra first (derived held, so
	// its pass repeats without a second event), then config.
	wt.waitEventNotes(t, "gone", corev1.EventTypeNormal, "ChildrenDeleted", []string{
		"deleted ConfigMap " + wt.ns + "/gone-derived, ConfigMap " + wt.ns + "/gone-extra",
		"deleted ConfigMap " + wt.ns + "/gone-config",
	})
	wantNormal := []string{"Normal " + "ChildrenApplied", "Normal " + "ChildrenDeleted"}
	if got := wt.events(t, "gone"); slices.ContainsFunc(got, func(e string) bool {
		return strings.HasPrefix(e, "Normal ") && !slices.Contains(wantNormal, e)
	}) {
		t.Errorf("events about gone: %v; want no Normal events besides %v", got, wantNormal)
	}
	harness.Eventually(t, 10*time.Second, func() (bool, string) {
		n := metricValue(t, "convergo_finalizing_objects", map[string]string{"controller": wt.name})
		return n == 0, fmt.Sprintf("convergo_finalizing_objects = %v", n)
	})
}

// TestIntegrationReconcilerDeletionConcurrency: with one worker for the Widgets and three places for
// those being deleted (WithDeletionConcurrency), three deleted Widgets are finalized at once: their
// cleanups (after every child is gone) overlap, and each waits for the others. Then every Widget and
// child is gone. The reconciles that finalize them started while the Widgets were live and waited for
// the one place a blocked reconcile held (as on a loaded machine): they must finalize in the deletion
// places all the same. With the deletions sharing the one worker, the first cleanup would wait alone.
func TestIntegrationReconcilerDeletionConcurrency(t *testing.T) {
	const deleting = 3
	var (
		mu           sync.Mutex
		inside, most int
		together     = make(chan struct{})
		waiting      = map[string]int{} // reconciles started and not ended, by Widget
		blocking     atomic.Bool        // the blocker's Status hook holds the others' place
		blocked      = make(chan struct{})
		unblock      = make(chan struct{})
	)
	cleanupHook := func(ctx context.Context, w *testapi.Widget) (bool, error) {
		mu.Lock()
		inside++
		if inside > most {
			most = inside
			if most == deleting {
				close(together)
			}
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			inside--
			mu.Unlock()
		}()
		// Bounded, so that a Reconciler finalizing one Widget at a time still ends (and fails below).
		select {
		case <-together:
		case <-time.After(time.Minute):
		case <-ctx.Done():
		}
		return true, nil
	}
	statusHook := func(ctx context.Context, w *testapi.Widget, _ *graph.Result) error {
		if w.Name != "blocker" || !blocking.CompareAndSwap(true, false) {
			return nil
		}
		close(blocked)
		select {
		case <-unblock:
		case <-ctx.Done():
		}
		return nil
	}
	observe := func(_ context.Context, req ctrl.Request) func(ctrl.Result, error) {
		mu.Lock()
		waiting[req.Name]++
		mu.Unlock()
		return func(ctrl.Result, error) {
			mu.Lock()
			waiting[req.Name]--
			mu.Unlock()
		}
	}
	wt := newObservedWidgetTest(t, reconcile.Hooks[*testapi.Widget]{Cleanup: cleanupHook, Status: statusHook}, observe,
		reconcile.WithControllerOptions(func(o *controller.Options) { o.MaxConcurrentReconciles = 1 }), reconcile.WithDeletionConcurrency(deleting))
	var widgets []*testapi.Widget
	for _, name := range []string{"blocker", "lane-0", "lane-1", "lane-2"} {
		widgets = append(widgets, wt.create(t, name, testapi.WidgetSpec{Data: map[string]string{"k": "v"}}))
	}
	for _, w := range widgets {
		wt.waitWidget(t, w, "its finalizer", func(w *testapi.Widget) bool { return len(w.Finalizers) > 0 })
		harness.WaitForObject(t, wt.client, client.ObjectKey{Namespace: wt.ns, Name: w.Name + "-config"}, &corev1.ConfigMap{},
			time.Minute, func(*corev1.ConfigMap) bool { return true })
	}
	blocker, lanes := widgets[0], widgets[1:]
	// The blocker's reconcile holds the one place of the objects not being deleted.
	blocking.Store(true)
	annotate(t, wt.client, blocker, "poke", "1")
	<-blocked
	// Reconciles of the live Widgets start and wait for that place; then the Widgets are deleted.
	for _, w := range lanes {
		annotate(t, wt.client, w, "poke", "1")
	}
	harness.Eventually(t, time.Minute, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return waiting["lane-0"] == 1 && waiting["lane-1"] == 1 && waiting["lane-2"] == 1,
			fmt.Sprintf("the live Widgets' reconciles wait for a place: %v", waiting)
	})
	for _, w := range lanes {
		if err := wt.client.Delete(t.Context(), w); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range lanes { // the waiting reconciles read the deletion when they go on
		harness.WaitForObject(t, wt.mgr.GetClient(), client.ObjectKeyFromObject(w), &testapi.Widget{}, time.Minute,
			func(w *testapi.Widget) bool { return w.DeletionTimestamp != nil })
	}
	close(unblock)
	for _, w := range lanes {
		harness.WaitForDeletion(t, wt.client, w, 4*time.Minute)
		err := wt.client.Get(t.Context(), client.ObjectKey{Namespace: wt.ns, Name: w.Name + "-config"}, &corev1.ConfigMap{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s-config still exists after finalization (get: %v)", w.Name, err)
		}
	}
	// Every place taken is in convergo_reconcile_wait_seconds, under its lane: each deleted Widget took
	// a deletion place at least once.
	if n := metricValue(t, "convergo_reconcile_wait_seconds", map[string]string{"controller": wt.name, "lane": "deleting"}); n < deleting {
		t.Errorf("deletion places recorded in convergo_reconcile_wait_seconds: %v, want at least %d", n, deleting)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(deleting, most); diff != "" {
		t.Errorf("Widgets finalized at once (-want +got):\n%s", diff)
	}
}

// annotate sets an annotation on obj, which brings a reconcile of it.
func annotate(t *testing.T, c client.Client, obj client.Object, key, value string) {
	t.Helper()
	patch := client.RawPatch("application/merge-patch+json", []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)))
	if err := c.Patch(t.Context(), obj, patch); err != nil {
		t.Fatal(err)
	}
}

// TestIntegrationReconcilerKeepsOtherFinalizers: another controller's finalizer on the Widget survives
// our finalizer handling.
func TestIntegrationReconcilerKeepsOtherFinalizers(t *testing.T) {
	wt := newWidgetTest(t)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: wt.ns, Finalizers: []string{"other.example.com/keep"}}}
	if err := wt.client.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	wt.annotateReadyWhenCreated(t, "shared-config")
	got := wt.waitWidget(t, w, "Ready", isReady)
	if diff := cmp.Diff([]string{"other.example.com/keep", wt.rec.Finalizer()}, got.Finalizers); diff != "" {
		t.Errorf("finalizers (-want +got):\n%s", diff)
	}
	if err := wt.client.Delete(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	got = wt.waitWidget(t, w, "our finalizer removed", func(w *testapi.Widget) bool {
		return !slices.Contains(w.Finalizers, wt.rec.Finalizer())
	})
	if diff := cmp.Diff([]string{"other.example.com/keep"}, got.Finalizers); diff != "" {
		t.Errorf("finalizers after finalization (-want +got):\n%s", diff)
	}
	if _, err := finalizer.Remove(t.Context(), wt.client, got, "other.example.com/keep"); err != nil {
		t.Fatal(err)
	}
	harness.WaitForDeletion(t, wt.client, w, time.Minute)
}

// TestIntegrationReconcilerPrunes: a child the graph no longer declares is deleted (once the rest is
// ready), listed in that reconcile's ChildrenApplied event (the only one, by default) and counted in
// the metric.
func TestIntegrationReconcilerPrunes(t *testing.T) {
	wt := newWidgetTestWith(t, reconcile.Hooks[*testapi.Widget]{Status: func(_ context.Context, w *testapi.Widget, res *graph.Result) error {
		w.Status.ReadyChildren = 0
		for _, c := range res.Children {
			if c.Ready {
				w.Status.ReadyChildren++
			}
		}
		return nil
	}})
	w := wt.create(t, "opt", testapi.WidgetSpec{Data: map[string]string{"extra": "on"}})
	wt.annotateReadyWhenCreated(t, "opt-config")
	got := wt.waitWidget(t, w, "Ready with three children", func(w *testapi.Widget) bool {
		return status.IsReady(w) && meta.FindStatusCondition(w.GetConditions(), status.Ready).Message == "all 3 children ready" && w.Status.ReadyChildren == 3
	})
	extra := &corev1.ConfigMap{}
	if err := wt.client.Get(t.Context(), client.ObjectKey{Namespace: wt.ns, Name: "opt-extra"}, extra); err != nil {
		t.Fatal(err)
	}

	got.Spec.Data = nil
	if err := wt.client.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	harness.WaitForDeletion(t, wt.client, extra, time.Minute)
	wt.waitWidget(t, w, "Ready with two children", func(w *testapi.Widget) bool {
		return status.IsReady(w) && meta.FindStatusCondition(w.GetConditions(), status.Ready).Message == "all 2 children ready" && w.Status.ReadyChildren == 2
	})
	// By default only the reconcile that pruned emits ChildrenApplied (the creations emit none). The
	// data moved out of config; extra is pruned once config is applied and ready again.
	wt.waitEventNotes(t, "opt", corev1.EventTypeNormal, "ChildrenApplied", []string{
		"updated ConfigMap " + wt.ns + "/opt-config; pruned ConfigMap " + wt.ns + "/opt-extra",
	})
	if n := metricValue(t, "convergo_child_operations_total", map[string]string{"controller": wt.name, "kind": "ConfigMap", "operation": "Deleted"}); n != 1 {
		t.Errorf("convergo_child_operations_total{operation=Deleted} = %v, want 1", n)
	}
}

// TestIntegrationReconcilerTransientError: a child the API server rejects is a transient error:
// Reconciling with the failed step and the error, one Warning event, retries with backoff (not a hot loop), and recovery.
func TestIntegrationReconcilerTransientError(t *testing.T) {
	wt := newWidgetTest(t)
	w := wt.create(t, "flaky", testapi.WidgetSpec{Data: map[string]string{"not a valid key!": "v"}})
	got := wt.waitWidget(t, w, "Reconciling/ApplyFailed (the child's apply)", func(w *testapi.Widget) bool {
		return condition(w, status.Reconciling) == "True/ApplyFailed"
	})
	if c := meta.FindStatusCondition(got.GetConditions(), status.Ready); c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "not a valid key!") {
		t.Errorf("Ready = %+v, want False with the API server's error", c)
	}
	wt.waitEvent(t, "flaky", "Warning ApplyFailed")

	// Retried with backoff: more attempts follow, but not a hot loop, and the unchanged error is not
	// written again.
	calls := wt.calls.Load()
	wt.counter.Reset()
	time.Sleep(3 * time.Second)
	retries := wt.calls.Load() - calls
	if retries < 2 || retries > 30 {
		t.Errorf("%d retries in 3s; want a few (backoff)", retries)
	}
	if n := wt.counter.Snapshot().Count("patch", "widgets/status"); n != 0 {
		t.Errorf("%d status patches for an unchanged error, want 0", n)
	}
	if n := len(slices.DeleteFunc(wt.events(t, "flaky"), func(e string) bool { return e != "Warning ApplyFailed" })); n != 1 {
		t.Errorf("%d Warning ApplyFailed events, want 1 per transition", n)
	}

	got.Spec.Data = map[string]string{"valid": "v"}
	if err := wt.client.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	wt.annotateReadyWhenCreated(t, "flaky-config")
	wt.waitWidget(t, w, "Ready after the fix", isReady)
}

// TestIntegrationReconcilerWithWatches: a WithWatches watch on objects that are not children (here
// ConfigMaps labelled with a Widget's name, as an operator would watch a Secret its spec refers to)
// wakes the Widget it maps to; an object the map function ignores does not.
func TestIntegrationReconcilerWithWatches(t *testing.T) {
	var woken atomic.Int64 // reconciles of the Widget "watched" that reached the status hook
	mapToWidget := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
		name := o.GetLabels()["example.com/widget"]
		if name == "" {
			return nil
		}
		return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
	})
	wt := newWidgetTestWith(t, reconcile.Hooks[*testapi.Widget]{Status: func(_ context.Context, w *testapi.Widget, _ *graph.Result) error {
		if w.Name == "watched" {
			woken.Add(1)
		}
		return nil
	}}, reconcile.WithWatches(&corev1.ConfigMap{}, mapToWidget))
	w := wt.create(t, "watched", testapi.WidgetSpec{Data: map[string]string{"k": "v"}})
	// The Widget waits for its config child to be annotated: nothing wakes it by itself.
	wt.waitWidget(t, w, "Reconciling/WaitingForDependencies", func(w *testapi.Widget) bool {
		return condition(w, status.Reconciling) == "True/WaitingForDependencies"
	})
	wt.settledCalls(t)

	cases := []struct {
		name   string
		labels map[string]string
		wakes  bool
	}{
		{name: "unrelated", labels: map[string]string{"app": "other"}, wakes: false},
		{name: "settings", labels: map[string]string{"example.com/widget": "watched"}, wakes: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := woken.Load()
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: wt.ns, Labels: tc.labels}}
			if err := wt.client.Create(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
			if tc.wakes {
				harness.Eventually(t, 30*time.Second, func() (bool, string) {
					return woken.Load() > before, fmt.Sprintf("Widget not reconciled after %s was created (%d reconciles)", tc.name, woken.Load())
				})
				return
			}
			wt.settledCalls(t)
			if n := woken.Load() - before; n != 0 {
				t.Errorf("%d reconciles of the Widget after creating %s, which maps to nothing; want 0", n, tc.name)
			}
		})
	}
}

// countingLimiter is a rate limiter that waits a fixed short time and records the keys it was asked
// about.
type countingLimiter struct {
	workqueue.TypedRateLimiter[ctrl.Request]
	mu   sync.Mutex
	asks map[ctrl.Request]int
}

func (l *countingLimiter) When(req ctrl.Request) time.Duration {
	l.mu.Lock()
	l.asks[req]++
	l.mu.Unlock()
	return l.TypedRateLimiter.When(req)
}

func (l *countingLimiter) count(req ctrl.Request) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.asks[req]
}

// TestIntegrationReconcilerRateLimiter: the RateLimiter given through WithControllerOptions decides when a failing object is
// retried: it is asked for every retry of the Widget whose child the API server rejects.
func TestIntegrationReconcilerRateLimiter(t *testing.T) {
	limiter := &countingLimiter{
		TypedRateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[ctrl.Request](20*time.Millisecond, 20*time.Millisecond),
		asks:             map[ctrl.Request]int{},
	}
	wt := newWidgetTest(t, reconcile.WithControllerOptions(func(o *controller.Options) { o.RateLimiter = limiter }))
	w := wt.create(t, "limited", testapi.WidgetSpec{Data: map[string]string{"not a valid key!": "v"}})
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}
	harness.Eventually(t, time.Minute, func() (bool, string) {
		n := limiter.count(req)
		return n >= 3, fmt.Sprintf("the limiter was asked %d times about %s, want 3 retries", n, req)
	})
}

// TestIntegrationReconcilerDependsOnForCreation: once both children exist and the dependency is no
// longer ready (a rollout), a change to the dependent goes through at once with a creation-only edge,
// and the Ready condition names only the dependency as in progress; with DependsOn the change waits
// and the condition says the dependent waits.
func TestIntegrationReconcilerDependsOnForCreation(t *testing.T) {
	tests := map[string]struct {
		edge         string
		wantReplicas string
		wantMessage  string
	}{
		"creation only": {edge: "creation", wantReplicas: "2", wantMessage: "config: not annotated ready=true"},
		"every change":  {edge: "every", wantReplicas: "1", wantMessage: "config: not annotated ready=true; derived waits for config: not annotated ready=true"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			wt := newWidgetTest(t)
			w := wt.create(t, "edge", testapi.WidgetSpec{Data: map[string]string{"edge": tc.edge}, Replicas: 1})
			wt.annotateReadyWhenCreated(t, "edge-config")
			got := wt.waitWidget(t, w, "Ready", isReady)

			// The dependency stops being ready, then the spec changes.
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "edge-config", Namespace: wt.ns}}
			if err := wt.client.Patch(t.Context(), cm, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"ready":"false"}}}`))); err != nil {
				t.Fatal(err)
			}
			wt.waitWidget(t, w, "Ready=False", func(w *testapi.Widget) bool {
				return condition(w, status.Ready) == "False/"+"Progressing" || strings.HasPrefix(condition(w, status.Ready), "False/")
			})
			if err := wt.client.Get(t.Context(), client.ObjectKeyFromObject(w), got); err != nil {
				t.Fatal(err)
			}
			got.Spec.Replicas = 2
			if err := wt.client.Update(t.Context(), got); err != nil {
				t.Fatal(err)
			}
			gen := got.Generation
			got = wt.waitWidget(t, w, "the change reconciled", func(w *testapi.Widget) bool {
				c := meta.FindStatusCondition(w.GetConditions(), status.Ready)
				return c != nil && c.ObservedGeneration == gen
			})
			derived := &corev1.ConfigMap{}
			if err := wt.client.Get(t.Context(), client.ObjectKey{Namespace: wt.ns, Name: "edge-derived"}, derived); err != nil {
				t.Fatal(err)
			}
			type outcome struct{ Replicas, Message string }
			if diff := cmp.Diff(outcome{tc.wantReplicas, tc.wantMessage}, outcome{derived.Data["replicas"], meta.FindStatusCondition(got.GetConditions(), status.Ready).Message}); diff != "" {
				t.Errorf("derived and the Ready message after the change (-want +got):\n%s", diff)
			}
		})
	}
}

// TestIntegrationReconcilerSuspend: while a Widget carries convergo.dev/suspend=true, a spec change and
// a foreign change to a child are left alone (no child write), and the status says it is suspended;
// resuming converges both; deleting a suspended Widget still deletes its children and releases it.
func TestIntegrationReconcilerSuspend(t *testing.T) {
	wt := newWidgetTest(t)
	w := wt.create(t, "paused", testapi.WidgetSpec{Data: map[string]string{"k": "v"}, Replicas: 1})
	wt.annotateReadyWhenCreated(t, "paused-config")
	wt.waitWidget(t, w, "Ready", isReady)
	setSuspend := func(value string) {
		t.Helper()
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, "convergo.dev/suspend", value)
		if err := wt.client.Patch(t.Context(), &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "paused", Namespace: wt.ns}},
			client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
			t.Fatal(err)
		}
	}
	childData := func(name string) map[string]string {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := wt.client.Get(t.Context(), client.ObjectKey{Namespace: wt.ns, Name: name}, cm); err != nil {
			t.Fatal(err)
		}
		return cm.Data
	}

	setSuspend(`"true"`)
	wt.waitWidget(t, w, "Suspended=True", func(w *testapi.Widget) bool {
		return condition(w, "Suspended") == "True/"+"Suspended"
	})
	wt.counter.Reset()
	seenSuspended := metricValue(t, "convergo_reconcile_results_total", map[string]string{"controller": wt.name, "result": "suspended"})
	got := &testapi.Widget{}
	if err := wt.client.Get(t.Context(), client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	got.Spec.Replicas = 2
	if err := wt.client.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	if err := wt.client.Patch(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "paused-config", Namespace: wt.ns}},
		client.RawPatch("application/merge-patch+json", []byte(`{"data":{"k":"changed by someone"}}`))); err != nil {
		t.Fatal(err)
	}
	suspendedResults := map[string]string{"controller": wt.name, "result": "suspended"}
	harness.Eventually(t, time.Minute, func() (bool, string) {
		n := metricValue(t, "convergo_reconcile_results_total", suspendedResults)
		return n > seenSuspended, fmt.Sprintf("suspended reconciles: %v, %v before the change", n, seenSuspended)
	})
	// The change is seen and not applied: the status still claims the generation before it.
	gen := got.Generation
	got = &testapi.Widget{}
	if err := wt.client.Get(t.Context(), client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.ObservedGeneration >= got.Generation {
		t.Errorf("observedGeneration %d while suspended, want below the generation %d", got.Status.ObservedGeneration, got.Generation)
	}
	type suspended struct {
		Conditions      []string
		KStatus         kstatus.Status
		Derived, Config map[string]string
		ChildWrites     int
	}
	var conds []string
	for _, c := range got.Status.Conditions {
		conds = append(conds, c.Type+"="+string(c.Status)+"/"+c.Reason)
	}
	reqs := wt.counter.Snapshot().InNamespace(wt.ns)
	// A suspended Widget keeps its Ready and is never Failed in kstatus (kubectl wait, Flux, Argo CD);
	// with a spec changed while suspended it reads InProgress: the change is not applied.
	got.SetGroupVersionKind(testapi.GroupVersion.WithKind("Widget"))
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(got)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := kstatus.Compute(&unstructured.Unstructured{Object: u})
	if err != nil {
		t.Fatal(err)
	}
	want := suspended{Conditions: []string{"Ready=True/Reconciled", "Suspended=True/Suspended"}, KStatus: kstatus.InProgressStatus,
		Derived: map[string]string{"replicas": "1"}, Config: map[string]string{"k": "changed by someone"}}
	if diff := cmp.Diff(want, suspended{conds, ks.Status, childData("paused-derived"), childData("paused-config"), reqs.Count("", "configmaps")}); diff != "" {
		t.Errorf("while suspended (-want +got):\n%s\n%v", diff, reqs)
	}

	setSuspend("null")
	wt.waitWidget(t, w, "Ready after resuming", func(w *testapi.Widget) bool {
		c := meta.FindStatusCondition(w.GetConditions(), status.Ready)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gen && w.Status.ObservedGeneration == gen &&
			meta.FindStatusCondition(w.GetConditions(), "Suspended") == nil
	})
	if diff := cmp.Diff([]map[string]string{{"replicas": "2"}, {"k": "v"}}, []map[string]string{childData("paused-derived"), childData("paused-config")}); diff != "" {
		t.Errorf("after resuming: derived and config (-want +got):\n%s", diff)
	}

	setSuspend(`"true"`)
	wt.waitWidget(t, w, "suspended again", func(w *testapi.Widget) bool {
		return condition(w, "Suspended") == "True/"+"Suspended"
	})
	if err := wt.client.Delete(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	harness.WaitForDeletion(t, wt.client, w, time.Minute)
	for _, n := range []string{"paused-config", "paused-derived"} {
		if err := wt.client.Get(t.Context(), client.ObjectKey{Namespace: wt.ns, Name: n}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("child %s of the deleted suspended Widget: get = %v, want not found", n, err)
		}
	}
}

// TestIntegrationReconcilerControllerOptions: WithControllerOptions reaches controller-runtime's
// per-controller options: with a LogConstructor of its own, the reconciles log through it.
func TestIntegrationReconcilerControllerOptions(t *testing.T) {
	var (
		mu    sync.Mutex
		lines []string
	)
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	wt := newWidgetTest(t, reconcile.WithControllerOptions(func(o *controller.Options) {
		o.LogConstructor = func(*ctrlreconcile.Request) logr.Logger { return logger }
	}))
	w := wt.create(t, "logged", testapi.WidgetSpec{Data: map[string]string{"k": "v"}})
	wt.annotateReadyWhenCreated(t, "logged-config")
	wt.waitWidget(t, w, "Ready", isReady)
	harness.Eventually(t, waitTimeout, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			if strings.Contains(l, `"msg"="ready"`) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no reconcile logged through the controller's LogConstructor: %q", lines)
	})
}

// TestIntegrationReconcilerDeletionFailureSaid: a deletion held by a failing step reads Ready=False
// with Reconciling=True (Stalled=True when the error is terminal), reason DeletionFailed and a message
// naming the step and the error, never the Ready it had; once the step succeeds the object is gone.
func TestIntegrationReconcilerDeletionFailureSaid(t *testing.T) {
	cases := map[string]struct {
		err      error
		wantCond string // the condition that is True besides Ready=False
	}{
		"transient": {err: errors.New("database unreachable"), wantCond: status.Reconciling},
		"terminal":  {err: ctrlreconcile.TerminalError(errors.New("database refuses the role")), wantCond: status.Stalled},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var failing atomic.Bool
			failing.Store(true)
			wt := newWidgetTestWith(t, reconcile.Hooks[*testapi.Widget]{Cleanup: func(context.Context, *testapi.Widget) (bool, error) {
				if failing.Load() {
					return false, tc.err
				}
				return true, nil
			}})
			w := wt.create(t, "held", testapi.WidgetSpec{Data: map[string]string{"k": "v"}})
			wt.annotateReadyWhenCreated(t, "held-config")
			wt.waitWidget(t, w, "Ready", isReady)
			if err := wt.client.Delete(t.Context(), w); err != nil {
				t.Fatal(err)
			}
			got := wt.waitWidget(t, w, "the failed deletion said", func(w *testapi.Widget) bool {
				c := meta.FindStatusCondition(w.GetConditions(), status.Ready)
				return c != nil && c.Reason == "DeletionFailed"
			})
			type cond struct{ Status, Reason, Message string }
			summary := func(condType string) cond {
				c := meta.FindStatusCondition(got.GetConditions(), condType)
				if c == nil {
					return cond{}
				}
				says := strings.HasPrefix(c.Message, "cleanup: ") && strings.HasSuffix(c.Message, tc.err.Error())
				return cond{string(c.Status), c.Reason, fmt.Sprint(says)}
			}
			want := cond{"False", "DeletionFailed", "true"} // the message names the step and the error
			if diff := cmp.Diff(want, summary(status.Ready)); diff != "" {
				t.Errorf("Ready (-want +got):\n%s", diff)
			}
			want.Status = "True"
			if diff := cmp.Diff(want, summary(tc.wantCond)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.wantCond, diff)
			}
			failing.Store(false)
			if tc.wantCond == status.Stalled { // a terminal error waits for a change
				annotate(t, wt.client, got, "retry", "1")
			}
			harness.WaitForDeletion(t, wt.client, w, time.Minute)
		})
	}
}

// TestIntegrationReconcilerRedeclaredKeptChild: a kept child (KeepOnDelete) that the graph stopped
// declaring is released; declared again, it is not taken back: the Widget reads Stalled=True, reason
// NotOwned, with a message naming the child and what to do, and once the child is deleted by hand (no
// event reaches the Widget: the released child carries none of its marks) the retry creates it again
// as the Widget's.
func TestIntegrationReconcilerRedeclaredKeptChild(t *testing.T) {
	wt := newWidgetTest(t)
	setData := func(w *testapi.Widget, data map[string]string) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error { // the controller writes its status meanwhile
			if err := wt.client.Get(t.Context(), client.ObjectKeyFromObject(w), w); err != nil {
				return err
			}
			w.Spec.Data = data
			return wt.client.Update(t.Context(), w)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	withExtra := map[string]string{"k": "v", "extra": "1", "keep-extra": "true"}
	w := wt.create(t, "kept", testapi.WidgetSpec{Data: withExtra})
	wt.annotateReadyWhenCreated(t, "kept-config")
	wt.waitWidget(t, w, "Ready", isReady)
	extra := &corev1.ConfigMap{}
	extraKey := client.ObjectKey{Namespace: wt.ns, Name: "kept-extra"}

	setData(w, map[string]string{"k": "v"})
	harness.WaitForObject(t, wt.client, extraKey, extra, time.Minute, func(cm *corev1.ConfigMap) bool {
		return !ownership.IsTrackedBy(cm, w) && metav1.GetControllerOf(cm) == nil
	})

	setData(w, withExtra)
	got := wt.waitWidget(t, w, "Stalled, NotOwned", func(w *testapi.Widget) bool {
		c := meta.FindStatusCondition(w.GetConditions(), status.Stalled)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == "NotOwned"
	})
	msg := meta.FindStatusCondition(got.GetConditions(), status.Stalled).Message
	for _, want := range []string{"ConfigMap " + wt.ns + "/kept-extra", "released by KeepOnDelete", "delete it", "apply.WithAdoptOrphans()"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Stalled message %q does not say %q", msg, want)
		}
	}
	if c := meta.FindStatusCondition(got.GetConditions(), status.Ready); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Ready while a declared child is not the Widget's: %+v", c)
	}

	if err := wt.client.Delete(t.Context(), extra); err != nil {
		t.Fatal(err)
	}
	wt.waitWidget(t, w, "Ready again", isReady)
	if err := wt.client.Get(t.Context(), extraKey, extra); err != nil {
		t.Fatal(err)
	}
	if !ownership.IsTrackedBy(extra, w) {
		t.Errorf("kept-extra created again is not the Widget's: labels %v", extra.Labels)
	}
}
