package reconcile_test

import (
	"context"
	"fmt"
	"net/http"

	"k8s.io/client-go/rest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/graph"
)

// exampleManager stands in for the manager of an operator (ctrl.NewManager) so that the example runs
// without an API server: it hands out a fake client and a fake event recorder.
type exampleManager struct {
	manager.Manager
	client   client.Client
	recorder recorder.EventRecorder
}

func (m exampleManager) GetClient() client.Client                       { return m.client }
func (m exampleManager) GetAPIReader() client.Reader                    { return m.client }
func (m exampleManager) GetScheme() *runtime.Scheme                     { return m.client.Scheme() }
func (m exampleManager) GetCache() cache.Cache                          { return nil }
func (m exampleManager) GetEventRecorder(string) recorder.EventRecorder { return m.recorder }
func (m exampleManager) GetConfig() *rest.Config                        { return nil }
func (m exampleManager) GetHTTPClient() *http.Client                    { return nil }

func ExampleNewReconciler() {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = testapi.AddToScheme(scheme) // testapi.Widget stands for your API type
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(testapi.GroupVersion.WithKind("Widget"), meta.RESTScopeNamespace)

	w := &testapi.Widget{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "1234", Generation: 1},
		Spec:       testapi.WidgetSpec{Data: map[string]string{"greeting": "hello"}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).
		WithObjects(w).WithStatusSubresource(w).Build()
	rec := events.NewFakeRecorder(10)

	// The operator's part: the children of a Widget, built from its spec.
	children := func(ctx context.Context, w *testapi.Widget) (*graph.Graph, error) {
		if w.Spec.Replicas > 5 {
			return nil, reconcile.Invalid("replicas must be at most 5, got %d", w.Spec.Replicas)
		}
		g := graph.New()
		g.Add("config", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.Name + "-config"}, Data: w.Spec.Data})
		return g, nil
	}
	// In an operator: r := reconcile.NewReconciler(mgr, hooks, ...); r.SetupWithManager(mgr).
	r := reconcile.NewReconciler(exampleManager{client: c, recorder: rec}, reconcile.Hooks[*testapi.Widget]{Children: children},
		reconcile.WithOwns(&corev1.ConfigMap{}),
		reconcile.WithChangeEvents()) // also an event for the creation

	show := func(step string) {
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)})
		got := &testapi.Widget{}
		_ = c.Get(ctx, client.ObjectKeyFromObject(w), got)
		fmt.Printf("%s: requeue=%v err=%v finalizers=%v\n", step, !res.IsZero(), err, got.Finalizers)
		for _, cond := range got.Status.Conditions {
			fmt.Printf("  %s=%s %s: %s\n", cond.Type, cond.Status, cond.Reason, cond.Message)
		}
		for len(rec.Events) > 0 {
			fmt.Println("  event:", <-rec.Events)
		}
	}
	show("first")
	show("again")

	got := &testapi.Widget{}
	_ = c.Get(ctx, client.ObjectKeyFromObject(w), got)
	got.Spec.Replicas, got.Generation = 9, 2
	_ = c.Update(ctx, got)
	show("invalid")
	// Output:
	// first: requeue=false err=<nil> finalizers=[test.convergo.dev/finalizer]
	//   Ready=True Reconciled: the child is ready
	//   event: Normal ChildrenApplied created ConfigMap default/app-config
	// again: requeue=false err=<nil> finalizers=[test.convergo.dev/finalizer]
	//   Ready=True Reconciled: the child is ready
	// invalid: requeue=false err=terminal error: replicas must be at most 5, got 9 finalizers=[test.convergo.dev/finalizer]
	//   Ready=False InvalidSpec: replicas must be at most 5, got 9
	//   Stalled=True InvalidSpec: replicas must be at most 5, got 9
	//   event: Warning InvalidSpec replicas must be at most 5, got 9
}
