package harness

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// StandInForForegroundDeletion removes, until the test ends, the foregroundDeletion finalizer from
// every object of the given kinds that is being deleted, as kube-controller-manager's garbage collector
// does once an object's dependents are gone. The plain API server runs no garbage collector, so an
// object deleted with foreground propagation (graph's DeletionPropagation(Foreground), kubectl delete
// --cascade=foreground) would otherwise stay terminating forever, and a test waiting for it would hang;
// it has no dependents there either (no controller creates a Deployment's ReplicaSets), so removing the
// finalizer is all the collector would do. With WithFullCluster the real collector runs: do not use it
// there. It looks every PollInterval.
//
//	env.StandInForForegroundDeletion(t, &appsv1.Deployment{})
func (e *Env) StandInForForegroundDeletion(t testing.TB, kinds ...client.Object) {
	t.Helper()
	var lists []*unstructured.UnstructuredList
	for _, k := range kinds {
		gvk, err := apiutil.GVKForObject(k, e.Scheme)
		if err != nil {
			t.Fatalf("StandInForForegroundDeletion: %v", err)
		}
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		lists = append(lists, l)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(PollInterval)
		defer ticker.Stop()
		for {
			for _, l := range lists {
				if err := e.removeForegroundFinalizers(ctx, l); err != nil && ctx.Err() == nil {
					t.Logf("stand-in for the garbage collector: %v", err)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// removeForegroundFinalizers removes the foregroundDeletion finalizer of every object of list's kind
// that is being deleted.
func (e *Env) removeForegroundFinalizers(ctx context.Context, list *unstructured.UnstructuredList) error {
	if err := e.Client.List(ctx, list); err != nil {
		return fmt.Errorf("list %s: %w", list.GetKind(), err)
	}
	for i := range list.Items {
		obj := &list.Items[i]
		at := slices.Index(obj.GetFinalizers(), metav1.FinalizerDeleteDependents)
		if obj.GetDeletionTimestamp() == nil || at < 0 {
			continue
		}
		patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/finalizers/%d","value":%q},{"op":"remove","path":"/metadata/finalizers/%d"}]`,
			at, metav1.FinalizerDeleteDependents, at)
		if err := e.Client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, []byte(patch))); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("remove the foregroundDeletion finalizer of %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}
