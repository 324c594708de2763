//go:build integration

package reconcile_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestIntegrationNewCacheDecodesJSONWatches: NewCache decodes the watches of a custom resource
// (JSON) itself and leaves a built-in kind's (protobuf) to client-go. Its informer follows creates,
// updates and deletes, and holds each object as the API server has it (without managedFields, which
// LeanCache drops). An ERROR event, which a watch from a resourceVersion the API server no longer
// has gets, comes out as client-go gives it: a Status the reflector turns into an error.
func TestIntegrationNewCacheDecodesJSONWatches(t *testing.T) {
	env := harness.Default()
	c := setupWidgets(t, env)
	ns := env.Namespace(t)
	ctx := t.Context()
	widget := func(name, data string) *testapi.Widget {
		return &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: testapi.WidgetSpec{Data: map[string]string{"k": data}}}
	}
	listed := widget("listed", "before the cache started")
	createGone(t, c, listed)

	var mu sync.Mutex
	lws := map[string]toolscache.ListerWatcher{} // by the informer's object type
	opts := widgetCacheOptions(t, env.Config, ns, nil)
	opts.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
		mu.Lock()
		defer mu.Unlock()
		lws[fmt.Sprintf("%T", obj)] = lw
		return toolscache.NewSharedIndexInformer(lw, obj, resync, idx)
	}
	reconcile.LeanCache(&opts)
	cc := startWidgetCache(t, reconcile.NewCache, env.Config, opts)
	if _, err := cc.GetInformer(ctx, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}

	watched := widget("watched", "after")
	createGone(t, c, watched)
	listed.Spec.Data["k"] = "updated"
	if err := c.Update(ctx, listed); err != nil {
		t.Fatal(err)
	}
	gone := widget("gone", "deleted")
	createGone(t, c, gone)
	harness.Eventually(t, time.Minute, func() (bool, string) {
		err := cc.Get(ctx, client.ObjectKeyFromObject(gone), &testapi.Widget{})
		return err == nil, fmt.Sprintf("the cache does not show %s: %v", gone.Name, err)
	})
	if err := c.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, time.Minute, func() (bool, string) {
		err := cc.Get(ctx, client.ObjectKeyFromObject(gone), &testapi.Widget{})
		return apierrors.IsNotFound(err), fmt.Sprintf("the cache still shows %s: %v", gone.Name, err)
	})
	for _, w := range []*testapi.Widget{listed, watched} {
		key := client.ObjectKeyFromObject(w)
		var live, cached testapi.Widget
		if err := c.Get(ctx, key, &live); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, time.Minute, func() (bool, string) {
			err := cc.Get(ctx, key, &cached)
			return err == nil && cached.ResourceVersion == live.ResourceVersion,
				fmt.Sprintf("the cache has %s at resourceVersion %q (%v), the API server at %q", key, cached.ResourceVersion, err, live.ResourceVersion)
		})
		live.ManagedFields = nil
		live.TypeMeta, cached.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{} // the cache's reader sets them
		if diff := cmp.Diff(&live, &cached); diff != "" {
			t.Errorf("cached %s (-API server +cache):\n%s", key, diff)
		}
	}

	mu.Lock()
	widgetLW, configMapLW := lws["*testapi.Widget"], lws["*v1.ConfigMap"]
	mu.Unlock()
	got := map[string]bool{"Widget": reconcile.OwnDecodedWatches(widgetLW) > 0, "ConfigMap": reconcile.OwnDecodedWatches(configMapLW) > 0}
	if diff := cmp.Diff(map[string]bool{"Widget": true, "ConfigMap": false}, got); diff != "" {
		t.Errorf("kinds whose watches NewCache decoded itself (-want +got):\n%s", diff)
	}

	// A watch from resourceVersion 1, long compacted away from the watch cache's window.
	w, err := toolscache.ToListerWatcherWithContext(widgetLW).WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatalf("watch from resourceVersion 1: %v; want an ERROR event", err)
	}
	defer w.Stop()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("the watch ended without an event")
		}
		status, isStatus := ev.Object.(*metav1.Status)
		if ev.Type != watch.Error || !isStatus {
			t.Fatalf("got a %s event of a %T; want an ERROR event of a Status", ev.Type, ev.Object)
		}
		if err := apierrors.FromObject(status); !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Errorf("the ERROR event says %v; want the resourceVersion expired", err)
		}
	case <-time.After(time.Minute):
		t.Fatal(errors.New("no event in a minute from a watch from resourceVersion 1"))
	}
}
