package reconcile

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/status"
)

// TestFinalizerAddedWhileChildrenApplied: on an object's first reconcile the finalizer patch is held
// until the child in the object's namespace has been written (so a reconcile that added the
// finalizer before applying anything would never get there, and the held patch fails), while the
// child in another namespace, which the garbage collector cannot remove, is written only after the
// finalizer is in place.
func TestFinalizerAddedWhileChildrenApplied(t *testing.T) {
	s := rtScheme(t)
	mapper := testMapper().(*meta.DefaultRESTMapper)
	mapper.Add(testapi.GroupVersion.WithKind("Widget"), meta.RESTScopeNamespace)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", UID: "uid-w", Generation: 1}}

	var (
		mu         sync.Mutex
		order      []string
		localSent  = make(chan struct{})
		closeLocal sync.Once
	)
	record := func(what string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, what)
	}
	child := func(ctx context.Context, name string) {
		record("write " + name)
		if name == "local" {
			closeLocal.Do(func() { close(localSent) })
		}
	}
	c := fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).WithObjects(w).
		WithStatusSubresource(&testapi.Widget{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if _, ok := obj.(*testapi.Widget); ok {
					select {
					case <-localSent:
					case <-time.After(30 * time.Second):
						return errors.New("the local child was not written while the finalizer was being added")
					}
					if err := c.Patch(ctx, obj, patch, opts...); err != nil {
						return err
					}
					record("finalizer")
					return nil
				}
				child(ctx, obj.GetName())
				return c.Patch(ctx, obj, patch, opts...)
			},
			Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
				if named, ok := obj.(interface{ GetName() string }); ok {
					child(ctx, named.GetName())
				}
				return c.Apply(ctx, obj, opts...)
			},
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				child(ctx, obj.GetName())
				return c.Create(ctx, obj, opts...)
			},
		}).Build()
	children := func(_ context.Context, w *testapi.Widget) (*Graph, error) {
		g := NewGraph()
		g.Add("local", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "local"}})
		g.Add("remote", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "remote", Namespace: "other"}})
		return g, nil
	}
	r := NewReconciler(rtManager{client: c, scheme: s}, children,
		WithName("gate-test"), WithEventRecorder(events.NewFakeRecorder(10)))
	if r.initErr != nil {
		t.Fatal(r.initErr)
	}
	if _, err := r.Reconcile(t.Context(), ctrlRequest("ns", "w")); err != nil {
		t.Fatalf("reconcile: %v", err)
	}

	want := []string{"write local", "finalizer", "write remote"}
	mu.Lock()
	got := slices.Clone(order)
	mu.Unlock()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order of the writes (-want +got):\n%s", diff)
	}
	var live testapi.Widget
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(w), &live); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(live.Finalizers, r.finalizer) {
		t.Errorf("finalizers = %v, want %q", live.Finalizers, r.finalizer)
	}
	if !status.IsReady(&live) {
		t.Errorf("conditions = %+v, want Ready (the status patch must carry the finalizer's resourceVersion)", live.Status.Conditions)
	}
}

// TestFinalizerFailureStopsGatedChildren: when the finalizer cannot be added, the reconcile fails, and
// a child the garbage collector could not remove is never written.
func TestFinalizerFailureStopsGatedChildren(t *testing.T) {
	s := rtScheme(t)
	mapper := testMapper().(*meta.DefaultRESTMapper)
	mapper.Add(testapi.GroupVersion.WithKind("Widget"), meta.RESTScopeNamespace)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", UID: "uid-w", Generation: 1}}
	refused := errors.New("admission refused the finalizer")
	c := fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).WithObjects(w).
		WithStatusSubresource(&testapi.Widget{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if _, ok := obj.(*testapi.Widget); ok {
					return refused
				}
				return c.Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	children := func(_ context.Context, w *testapi.Widget) (*Graph, error) {
		g := NewGraph()
		g.Add("local", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "local"}})
		g.Add("remote", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "remote", Namespace: "other"}})
		return g, nil
	}
	r := NewReconciler(rtManager{client: c, scheme: s}, children,
		WithName("gate-failure-test"), WithEventRecorder(events.NewFakeRecorder(10)))
	if r.initErr != nil {
		t.Fatal(r.initErr)
	}
	if _, err := r.Reconcile(t.Context(), ctrlRequest("ns", "w")); !errors.Is(err, refused) {
		t.Fatalf("reconcile error = %v, want the finalizer's error", err)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "other", Name: "remote"}, &corev1.ConfigMap{}); err == nil {
		t.Error("the child in another namespace was written although the finalizer could not be added")
	}
	var live testapi.Widget
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(w), &live); err != nil {
		t.Fatal(err)
	}
	if len(live.Status.Conditions) != 0 {
		t.Errorf("status written although the finalizer could not be added: %+v", live.Status.Conditions)
	}
}
