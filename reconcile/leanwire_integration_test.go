//go:build integration

package reconcile_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/testing/harness"
)

// decoded records, for every Widget an informer's lists and watches decoded (before its transform),
// whether it came with managedFields.
type decoded struct {
	mu      sync.Mutex
	with    int
	without int
}

func (d *decoded) record(obj runtime.Object) {
	o, ok := obj.(*testapi.Widget)
	if !ok || o.Name == "" { // a bookmark carries a Widget with nothing but a resourceVersion
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(o.GetManagedFields()) > 0 {
		d.with++
	} else {
		d.without++
	}
}

func (d *decoded) counts() (with, without int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.with, d.without
}

// decodedLW is a ListerWatcher that records what the one it wraps decoded.
type decodedLW struct {
	lw  toolscache.ListerWatcherWithContext
	rec *decoded
}

func (l decodedLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l decodedLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

func (l decodedLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	list, err := l.lw.ListWithContext(ctx, opts)
	if err == nil {
		_ = meta.EachListItem(list, func(o runtime.Object) error { l.rec.record(o); return nil })
	}
	return list, err
}

func (l decodedLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := l.lw.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) { l.rec.record(e.Object); return e, true }), nil
}

// createGone creates w and deletes it before the test ends: a later test's manager that watches
// every namespace would otherwise reconcile it while its namespace is being deleted.
func createGone(t *testing.T, c client.Client, w *testapi.Widget) {
	t.Helper()
	if err := c.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Delete(context.WithoutCancel(t.Context()), w); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete %s: %v", w.Name, err)
		}
		harness.WaitForDeletion(t, c, w, time.Minute)
	})
}

// widgetCacheOptions returns the options of a cache of Widgets and built-in kinds in ns, whose REST
// mapper and, unless nil, its HTTP client go through hc (a new client when nil).
func widgetCacheOptions(t *testing.T, config *rest.Config, ns string, hc *http.Client) cache.Options {
	t.Helper()
	opts := cache.Options{Scheme: widgetScheme, HTTPClient: hc, DefaultNamespaces: map[string]cache.Config{ns: {}}}
	if hc == nil {
		var err error
		if hc, err = rest.HTTPClientFor(config); err != nil {
			t.Fatal(err)
		}
	}
	mapper, err := apiutil.NewDynamicRESTMapper(config, hc)
	if err != nil {
		t.Fatal(err)
	}
	opts.Mapper = mapper
	return opts
}

// startWidgetCache builds a cache with newCache, runs it until the test ends, and returns once its
// Widget informer has synced.
func startWidgetCache(t *testing.T, newCache cache.NewCacheFunc, config *rest.Config, opts cache.Options) cache.Cache {
	t.Helper()
	cc, err := newCache(config, opts)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = cc.Start(t.Context()) }()
	if _, err := cc.GetInformer(t.Context(), &testapi.Widget{}); err != nil {
		t.Fatal(err)
	}
	return cc
}

// TestIntegrationNewCacheDecodesNoManagedFields: with NewCache, an informer whose transform is
// LeanCache's never decodes the managedFields of a custom resource (its JSON is stripped on the way
// in), neither in its initial list nor in the events after it, and the cache holds the object
// otherwise whole. An informer with another transform (controller-runtime's, or SlimCache's, which
// reads managedFields) decodes them as sent.
func TestIntegrationNewCacheDecodesNoManagedFields(t *testing.T) {
	env := harness.Default()
	c := setupWidgets(t, env)
	cases := map[string]struct {
		configure func(*cache.Options)
		stripped  bool
		slim      bool // the cached copy keeps no spec maps (SlimCache)
	}{
		"LeanCache":                      {configure: func(o *cache.Options) { reconcile.LeanCache(o) }, stripped: true},
		"SlimCache's child":              {configure: func(o *cache.Options) { reconcile.SlimCache(o, &testapi.Widget{}) }, slim: true},
		"controller-runtime's transform": {configure: func(o *cache.Options) { o.DefaultTransform = cache.TransformStripManagedFields() }},
		"LeanCache, then another transform": {configure: func(o *cache.Options) {
			reconcile.LeanCache(o)
			o.DefaultTransform = cache.TransformStripManagedFields()
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			create := func(name, data string) *testapi.Widget {
				// Labelled as a child, which LeanCache's and SlimCache's informers of a child kind ask for.
				w := &testapi.Widget{
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{ownership.LabelOwnerUID: "u"}},
					Spec:       testapi.WidgetSpec{Data: map[string]string{"k": data}},
				}
				createGone(t, c, w)
				return w
			}
			before := create("before", "listed")

			rec := &decoded{}
			opts := widgetCacheOptions(t, env.Config, ns, nil)
			opts.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
				return toolscache.NewSharedIndexInformer(decodedLW{lw: toolscache.ToListerWatcherWithContext(lw), rec: rec}, obj, resync, idx)
			}
			tc.configure(&opts)
			cc := startWidgetCache(t, reconcile.NewCache, env.Config, opts)
			ctx := t.Context()
			after := create("after", "watched")

			for _, want := range []*testapi.Widget{before, after} {
				key := client.ObjectKeyFromObject(want)
				var got, live testapi.Widget
				harness.Eventually(t, time.Minute, func() (bool, string) {
					err := cc.Get(ctx, key, &got)
					return err == nil, fmt.Sprintf("cache: %v", err)
				})
				if err := cc.Get(ctx, key, &got); err != nil {
					t.Fatal(err)
				}
				if err := c.Get(ctx, key, &live); err != nil {
					t.Fatal(err)
				}
				if len(live.ManagedFields) == 0 {
					t.Fatalf("%s has no managedFields on the API server: the test shows nothing", key)
				}
				if diff := cmp.Diff(live.Spec, got.Spec); diff != "" && !tc.slim {
					t.Errorf("cached spec of %s (-live +cached):\n%s", key, diff)
				}
				if diff := cmp.Diff(live.Labels, got.Labels); diff != "" {
					t.Errorf("cached labels of %s (-live +cached):\n%s", key, diff)
				}
			}
			with, without := rec.counts()
			got := fmt.Sprintf("decoded with managedFields: %v, without: %v", with > 0, without > 0)
			want := fmt.Sprintf("decoded with managedFields: %v, without: %v", !tc.stripped, tc.stripped)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("what the informer decoded (%d with, %d without) (-want +got):\n%s", with, without, diff)
			}
		})
	}
}

// gzipSeen is a RoundTripper that records, per watch, whether its answer came gzip-compressed (Go's
// transport then decompressed it and marked the response Uncompressed).
type gzipSeen struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen map[bool]int
}

func (g *gzipSeen) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := g.next.RoundTrip(req)
	if err == nil && req.URL.Query().Get("watch") == "true" {
		g.mu.Lock()
		g.seen[resp.Uncompressed || resp.Header.Get("Content-Encoding") == "gzip"]++
		g.mu.Unlock()
	}
	return resp, err
}

// TestIntegrationNewCacheCompression: the API server sends NewCache's watches (each begins with a
// list) uncompressed, and compresses them with WithCompression, as for client-go's default client.
func TestIntegrationNewCacheCompression(t *testing.T) {
	env := harness.Default()
	c := setupWidgets(t, env)
	cases := map[string]struct {
		newCache cache.NewCacheFunc
		gzip     bool
	}{
		"NewCache":        {newCache: reconcile.NewCache},
		"WithCompression": {newCache: reconcile.NewCacheWith(reconcile.WithCompression()), gzip: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: ns}, Spec: testapi.WidgetSpec{Data: map[string]string{"k": "v"}}}
			createGone(t, c, w)
			hc, err := rest.HTTPClientFor(env.Config)
			if err != nil {
				t.Fatal(err)
			}
			rec := &gzipSeen{next: hc.Transport, seen: map[bool]int{}}
			hc.Transport = rec
			cc := startWidgetCache(t, tc.newCache, env.Config, widgetCacheOptions(t, env.Config, ns, hc))
			var got testapi.Widget
			if err := cc.Get(t.Context(), client.ObjectKeyFromObject(w), &got); err != nil {
				t.Fatalf("the cache does not show %s: %v", w.Name, err)
			}
			rec.mu.Lock()
			seen := maps.Clone(rec.seen)
			rec.mu.Unlock()
			if diff := cmp.Diff(map[bool]int{tc.gzip: 1}, seen); diff != "" {
				t.Errorf("watches by whether their answer was gzip-compressed (-want +got):\n%s", diff)
			}
		})
	}
}
