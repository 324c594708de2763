//go:build integration

package reconcile_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/testing/harness"
)

// foreignObjects is how many objects of the children's kinds that are not ours the test creates.
const foreignObjects = 5000

// maxForeignHeap is what they may add to the operator's heap, all of them together.
const maxForeignHeap = 1 << 20

// TestIntegrationLeanCacheIgnoresForeignObjects: with reconcile.LeanCache, 5,000 ConfigMaps,
// Deployments and Services that are not Convergo children (another namespace, another field manager,
// some owned by another object) add less than 1 MiB to the heap of a running operator whose children
// are of those kinds. Without LeanCache they cost about 2.5 KB each (the figure is logged).
func TestIntegrationLeanCacheIgnoresForeignObjects(t *testing.T) {
	env := harness.Default()
	wc := setupWidgets(t, env)
	ns, other := env.Namespace(t), env.Namespace(t)
	children := func(_ context.Context, w *testapi.Widget) (*reconcile.Graph, error) {
		g := reconcile.NewGraph()
		g.Add("config", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.Name}, Data: w.Spec.Data})
		g.Add("deployment", webDeployment(w.Name, "ours:1"))
		g.Add("service", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: w.Name}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": w.Name}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}})
		return g, nil
	}
	mgr := env.StartManager(t, func(mgr manager.Manager) error {
		return reconcile.NewReconciler(mgr, reconcile.Hooks[*testapi.Widget]{Children: children}, reconcile.WithName("leancache"),
			reconcile.WithOwns(&corev1.ConfigMap{}, &appsv1.Deployment{}, &corev1.Service{})).SetupWithManager(mgr)
	}, harness.WithManagerLogger(logr.Discard()), harness.WithManagerOptions(func(o *manager.Options) {
		o.Scheme = widgetScheme
		reconcile.LeanCache(&o.Cache, &corev1.ConfigMap{}, &appsv1.Deployment{}, &corev1.Service{})
	}))
	// The Widgets go before the manager stops: the package's other tests count reconciles of Widgets.
	t.Cleanup(func() { deleteWidgets(t, wc, ns, "first", "marker") })
	// A first Widget: every child informer runs and is synced.
	waitChildrenCached(t, wc, mgr, ns, "first")
	before := liveHeap()

	createForeign(t, env.Client, other)
	// A second Widget created after them: once the cache shows its children, every watch has delivered
	// what came before.
	waitChildrenCached(t, wc, mgr, ns, "marker")
	added := liveHeap() - before
	t.Logf("FIGURES lean cache: %d foreign objects added %d KiB to the heap", foreignObjects, added/1024)
	if added > maxForeignHeap {
		t.Errorf("%d objects that are not ours added %d KiB to the operator's heap, want less than %d KiB", foreignObjects, added/1024, maxForeignHeap/1024)
	}
}

// waitChildrenCached creates a Widget and waits until the manager's cache shows its three children.
func waitChildrenCached(t *testing.T, wc client.Client, mgr manager.Manager, ns, name string) {
	t.Helper()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: testapi.WidgetSpec{Data: map[string]string{"k": "v"}}}
	if err := wc.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: name}
	harness.Eventually(t, waitTimeout, func() (bool, string) {
		for _, obj := range []client.Object{&corev1.ConfigMap{}, &appsv1.Deployment{}, &corev1.Service{}} {
			if err := mgr.GetClient().Get(t.Context(), key, obj); err != nil {
				return false, fmt.Sprintf("%T %s: %v", obj, name, err)
			}
		}
		return true, ""
	})
}

// createForeign creates foreignObjects ConfigMaps (80%), Deployments and Services (10% each) in ns with
// another field manager, every tenth one owned by another object.
func createForeign(t *testing.T, c client.Client, ns string) {
	t.Helper()
	// The plain control plane has no namespace controller: remove them, so that the package's other
	// tests do not list them.
	t.Cleanup(func() {
		for _, obj := range []client.Object{&corev1.ConfigMap{}, &appsv1.Deployment{}, &corev1.Service{}} {
			if err := c.DeleteAllOf(context.Background(), obj, client.InNamespace(ns)); err != nil {
				t.Errorf("delete foreign %T: %v", obj, err)
			}
		}
	})
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "someone-else", Namespace: ns}}
	if err := c.Create(t.Context(), owner); err != nil {
		t.Fatal(err)
	}
	data := map[string]string{"payload": fmt.Sprintf("%01000d", 0)}
	work := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				name := fmt.Sprintf("foreign-%d", i)
				var obj client.Object
				switch {
				case i%10 == 0:
					d := webDeployment(name, "theirs:1")
					d.Namespace = ns
					obj = d
				case i%10 == 1:
					obj = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.ServiceSpec{
						ClusterIP: corev1.ClusterIPNone, // headless: the test cluster's IP range is small
						Selector:  map[string]string{"app": name}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
				default:
					obj = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "theirs"}}, Data: data}
				}
				if i%10 == 2 {
					obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}})
				}
				if err := c.Create(t.Context(), obj, client.FieldOwner("someone-else")); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range foreignObjects {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatalf("create foreign objects: %v", err)
	}
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// deleteWidgets deletes the named Widgets and waits until their Reconciler has let them go.
func deleteWidgets(t *testing.T, wc client.Client, ns string, names ...string) {
	t.Helper()
	ctx := context.Background() // t.Context() is done during cleanup
	for _, name := range names {
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		if err := wc.Delete(ctx, w); client.IgnoreNotFound(err) != nil {
			t.Errorf("delete Widget %s: %v", name, err)
			continue
		}
		harness.Eventually(t, waitTimeout, func() (bool, string) {
			err := wc.Get(ctx, client.ObjectKeyFromObject(w), &testapi.Widget{})
			return apierrors.IsNotFound(err), fmt.Sprintf("Widget %s still there: %v", name, err)
		})
	}
}
