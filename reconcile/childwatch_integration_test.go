//go:build integration

package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/builders"
	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/childcache"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/harness"
	"github.com/convergo-dev/convergo/testing/optest"
)

// quietTest is one test of the child watch filter: Widgets each owning one Deployment ("<name>-web",
// spec.replicas replicas, ReadyWhen builders.DeploymentAvailable), reconciled by a manager with one
// worker whose reconciles are recorded. There is no kube-controller-manager: the test writes the
// Deployments' status itself.
type quietTest struct {
	ns     string
	client client.Client
	recs   *optest.Reconciles
	// barriers counts the barrier label values.
	barriers int
}

// quietCache is the cache a quietTest's manager reads children from.
type quietCache struct {
	name string
	// lag holds every watch event back (harness.DelayWatches).
	lag time.Duration
	// cache sets the manager's cache options.
	cache func(*cache.Options)
}

// quietCaches: the manager's cache as it is, one that lags, one filtered to Convergo's children
// (childcache.Configure): no wake-up that matters may be lost with any of them.
var quietCaches = []quietCache{
	{name: "current"},
	{name: "lagging", lag: 300 * time.Millisecond},
	{name: "filtered", cache: func(o *cache.Options) { childcache.Configure(o, &appsv1.Deployment{}) }},
}

func newQuietTest(t *testing.T, qc quietCache, opts ...reconcile.ReconcilerOption) *quietTest {
	t.Helper()
	env := harness.Default()
	qt := &quietTest{ns: env.Namespace(t), client: setupWidgets(t, env), recs: optest.NewReconciles()}
	name := fmt.Sprintf("quiet-%d", widgetRuns.Add(1))
	opts = append([]reconcile.ReconcilerOption{
		reconcile.WithName(name),
		reconcile.WithOwns(&appsv1.Deployment{}),
		// One worker: requests are reconciled in the order they were queued (see barrier).
		reconcile.WithControllerOptions(func(o *controller.Options) { o.MaxConcurrentReconciles = 1 }),
	}, opts...)
	env.StartManager(t, func(mgr manager.Manager) error {
		r := reconcile.NewReconciler(mgr, reconcile.Hooks[*testapi.Widget]{Children: webChildren}, opts...)
		return r.SetupWithManager(mgr)
	}, qt.recs.Observing(), harness.WithManagerConfig(harness.DelayWatches(env.Config, qc.lag)), harness.WithManagerOptions(func(o *manager.Options) {
		o.Scheme = widgetScheme
		if qc.cache != nil {
			qc.cache(&o.Cache)
		}
	}))
	return qt
}

// webChildren declares the Widget's Deployment.
func webChildren(_ context.Context, w *testapi.Widget) (*graph.Graph, error) {
	labels := map[string]string{"app": w.Name}
	g := graph.New()
	g.Add("web", &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name + "-web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(w.Spec.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}).ReadyWhen(builders.DeploymentAvailable)
	return g, nil
}

// create creates a Widget with replicas and waits for its Deployment. At cleanup, while the manager
// still runs, the Widget is deleted and waited for: a Widget left behind would be reconciled by the
// managers of later tests (their caches see every namespace).
func (qt *quietTest) create(t *testing.T, name string, replicas int32) *testapi.Widget {
	t.Helper()
	w := optest.Create(t, qt.client, &testapi.Widget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: qt.ns}, Spec: testapi.WidgetSpec{Replicas: replicas},
	})
	harness.WaitForObject(t, qt.client, qt.web(w), &appsv1.Deployment{}, time.Minute, nil)
	return w
}

// web is the key of w's Deployment.
func (qt *quietTest) web(w *testapi.Widget) client.ObjectKey {
	return client.ObjectKey{Namespace: qt.ns, Name: w.Name + "-web"}
}

// setStatus writes the status of w's Deployment as kube-controller-manager would, through the status
// subresource: the current generation observed, every replica updated, available of them available,
// plus what more changes.
func (qt *quietTest) setStatus(t *testing.T, w *testapi.Widget, available int32, more func(*appsv1.DeploymentStatus)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := qt.client.Get(t.Context(), qt.web(w), d); err != nil {
			return err
		}
		want := ptr.Deref(d.Spec.Replicas, 1)
		d.Status.ObservedGeneration, d.Status.Replicas, d.Status.UpdatedReplicas = d.Generation, want, want
		d.Status.AvailableReplicas, d.Status.ReadyReplicas = available, available
		if more != nil {
			more(&d.Status)
		}
		return qt.client.Status().Update(t.Context(), d)
	})
	if err != nil {
		t.Fatalf("write the status of %s: %v", qt.web(w), err)
	}
}

// waitReady waits until w's Ready condition has status want, with a message containing msg.
func (qt *quietTest) waitReady(t *testing.T, w *testapi.Widget, want metav1.ConditionStatus, msg string) {
	t.Helper()
	harness.WaitForObject(t, qt.client, client.ObjectKeyFromObject(w), &testapi.Widget{}, time.Minute, func(got *testapi.Widget) bool {
		c := meta.FindStatusCondition(got.GetConditions(), status.Ready)
		return c != nil && c.Status == want && c.ObservedGeneration == got.Generation && strings.Contains(c.Message, msg)
	})
}

// barrier returns once every Deployment event sent before it has been handled and every reconcile
// those events queued has finished: it changes a label of other's Deployment that no child of the
// test declares, and waits for the reconcile of other that started after the change. The informer
// hands a watch's events to the controller in order, and the one worker takes requests in the order
// they were queued, so anything an earlier event queued runs before that reconcile.
func (qt *quietTest) barrier(t *testing.T, other *testapi.Widget) {
	t.Helper()
	qt.barriers++
	since := qt.recs.Mark()
	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"metadata":{"labels":{"barrier":"%d"}}}`, qt.barriers))
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: qt.ns, Name: other.Name + "-web"}}
	if err := qt.client.Patch(t.Context(), d, patch, client.FieldOwner("barrier")); err != nil {
		t.Fatal(err)
	}
	qt.recs.WaitFor(t, client.ObjectKeyFromObject(other), since, time.Minute)
}

// settle returns once w is no longer reconciled: a barrier after which nothing reconciled w.
func (qt *quietTest) settle(t *testing.T, w, other *testapi.Widget) {
	t.Helper()
	harness.Eventually(t, time.Minute, func() (bool, string) {
		since := qt.recs.Mark()
		qt.barrier(t, other)
		recs := qt.recs.Since(client.ObjectKeyFromObject(w), since)
		return len(recs) == 0, fmt.Sprintf("%s still reconciled: %v", w.Name, recs)
	})
}

// readyPair creates Widgets a (2 replicas) and b (1 replica), makes their Deployments available and
// waits until a is Ready and no longer reconciled.
func (qt *quietTest) readyPair(t *testing.T) (a, b *testapi.Widget) {
	t.Helper()
	a, b = qt.create(t, "a", 2), qt.create(t, "b", 1)
	qt.setStatus(t, a, 2, nil)
	qt.setStatus(t, b, 1, nil)
	qt.waitReady(t, a, metav1.ConditionTrue, "")
	qt.waitReady(t, b, metav1.ConditionTrue, "")
	qt.settle(t, a, b)
	return a, b
}

// TestIntegrationChildStatusQuiet: a status-only change of a child that does not change its readiness
// verdict (a condition written by the Deployment controller, as during every rollout) does not
// reconcile its owner; with WithEveryChildChange it does.
func TestIntegrationChildStatusQuiet(t *testing.T) {
	tests := []struct {
		name string
		opts []reconcile.ReconcilerOption
		// wake: the change reconciles a.
		wake bool
	}{
		{name: "default", wake: false},
		{name: "WithEveryChildChange", opts: []reconcile.ReconcilerOption{reconcile.WithEveryChildChange()}, wake: true},
	}
	for _, qc := range quietCaches {
		if qc.lag > 0 {
			continue // the barrier relies on the order in which events of two watches arrive
		}
		for _, tt := range tests {
			t.Run(qc.name+"/"+tt.name, func(t *testing.T) {
				testChildStatusQuiet(t, newQuietTest(t, qc, tt.opts...), tt.wake)
			})
		}
	}
}

func testChildStatusQuiet(t *testing.T, qt *quietTest, wake bool) {
	a, b := qt.readyPair(t)

	since := qt.recs.Mark()
	qt.setStatus(t, a, 2, func(st *appsv1.DeploymentStatus) {
		st.Conditions = []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
			Message: "Deployment has minimum availability.", LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}}
	})
	qt.barrier(t, b)
	recs := qt.recs.Since(client.ObjectKeyFromObject(a), since)
	if got := len(recs) > 0; got != wake {
		t.Errorf("a status change with the same readiness verdict: reconciles of a %v, want any: %v", recs, wake)
	}
}

// TestIntegrationChildStatusFlipsReadiness: a status change that changes the child's readiness wakes
// its owner, whose Ready condition follows, both ways.
func TestIntegrationChildStatusFlipsReadiness(t *testing.T) {
	for _, qc := range quietCaches {
		t.Run(qc.name, func(t *testing.T) { testChildStatusFlipsReadiness(t, newQuietTest(t, qc)) })
	}
}

func testChildStatusFlipsReadiness(t *testing.T, qt *quietTest) {
	a, _ := qt.readyPair(t)

	qt.setStatus(t, a, 1, nil)
	qt.waitReady(t, a, metav1.ConditionFalse, "1/2 replicas available")
	qt.setStatus(t, a, 0, nil)
	qt.waitReady(t, a, metav1.ConditionFalse, "0/2 replicas available")
	qt.setStatus(t, a, 2, nil)
	qt.waitReady(t, a, metav1.ConditionTrue, "")
}

// TestIntegrationChildDriftWakes: a foreign edit of a field the owner applied still wakes the owner,
// which reverts it.
func TestIntegrationChildDriftWakes(t *testing.T) {
	for _, qc := range quietCaches {
		t.Run(qc.name, func(t *testing.T) { testChildDriftWakes(t, newQuietTest(t, qc)) })
	}
}

func testChildDriftWakes(t *testing.T, qt *quietTest) {
	a, _ := qt.readyPair(t)

	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":5}}`))
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: qt.ns, Name: a.Name + "-web"}}
	if err := qt.client.Patch(t.Context(), d, patch, client.FieldOwner("someone-else")); err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(d.Spec.Replicas, 0) != 5 {
		t.Fatalf("the foreign edit left spec.replicas at %d", ptr.Deref(d.Spec.Replicas, 0))
	}
	harness.WaitForObject(t, qt.client, qt.web(a), &appsv1.Deployment{}, time.Minute, func(d *appsv1.Deployment) bool {
		return ptr.Deref(d.Spec.Replicas, 0) == 2
	})
	// The reverted spec is a new generation the Deployment controller has not observed: a waits for it.
	qt.waitReady(t, a, metav1.ConditionFalse, "waiting for")
	qt.setStatus(t, a, 2, nil)
	qt.waitReady(t, a, metav1.ConditionTrue, "")
}
