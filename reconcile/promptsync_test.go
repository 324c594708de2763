package reconcile

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// heldInformer is a real client-go informer of ConfigMaps whose list answers (with three objects)
// only once release is closed.
type heldInformer struct {
	toolscache.SharedIndexInformer
	release chan struct{}
}

func newHeldInformer(t *testing.T) *heldInformer {
	t.Helper()
	h := &heldInformer{release: make(chan struct{})}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
			select {
			case <-h.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
			for i := range 3 {
				list.Items = append(list.Items, corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
					Name: fmt.Sprintf("cm-%d", i), Namespace: "ns", ResourceVersion: "10",
				}})
			}
			return list, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewFake(), nil
		},
	}
	h.SharedIndexInformer = toolscache.NewSharedIndexInformer(listOnly{lw}, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go h.RunWithContext(ctx)
	return h
}

// listOnly makes the informer list and then watch, instead of asking for the initial objects as
// watch events (which the fake watch does not send).
type listOnly struct{ *toolscache.ListWatch }

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }

// oneInformerCache is the cache a promptCache wraps in these tests: it hands out one informer and
// counts its own sync checks.
type oneInformerCache struct {
	cache.Cache // nil: the tests call nothing else
	inf         *heldInformer
	syncChecks  atomic.Int32
	indexes     atomic.Int32
	// gets counts GetInformer calls; err, when set, is what they return.
	gets atomic.Int32
	err  error
}

func (c *oneInformerCache) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	c.gets.Add(1)
	if c.err != nil {
		return nil, c.err
	}
	return c.inf, nil
}

func (c *oneInformerCache) Start(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

func (c *oneInformerCache) IndexField(context.Context, client.Object, string, client.IndexerFunc) error {
	c.indexes.Add(1)
	return nil
}

func (c *oneInformerCache) WaitForCacheSync(context.Context) bool {
	c.syncChecks.Add(1)
	return c.inf.HasSynced()
}

func TestPromptCacheGetInformer(t *testing.T) {
	tests := []struct {
		name string
		opts []cache.InformerGetOption
		// synced: the informer has synced when GetInformer returns (else: the list is still held).
		synced bool
	}{
		{name: "blocks until synced by default", synced: true},
		{name: "blocks when asked to", opts: []cache.InformerGetOption{cache.BlockUntilSynced(true)}, synced: true},
		{name: "returns at once when asked to", opts: []cache.InformerGetOption{cache.BlockUntilSynced(false)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inner := &oneInformerCache{inf: newHeldInformer(t)}
			c := newPromptCache(inner)
			type answer struct {
				synced bool
				err    error
			}
			got := make(chan answer, 1)
			go func() {
				inf, err := c.GetInformer(t.Context(), &corev1.ConfigMap{}, tt.opts...)
				a := answer{err: err}
				if err == nil {
					a.synced = inf.HasSynced()
				}
				got <- a
			}()
			if !tt.synced {
				// The list is held: a GetInformer that does not block has answered before it.
				a := <-got
				close(inner.inf.release)
				if a.err != nil || a.synced {
					t.Fatalf("GetInformer without blocking returned synced=%v, err=%v; want the unsynced informer", a.synced, a.err)
				}
				return
			}
			close(inner.inf.release)
			a := <-got
			if a.err != nil || !a.synced {
				t.Fatalf("GetInformer returned synced=%v, err=%v; want a synced informer", a.synced, a.err)
			}
		})
	}
}

func TestPromptCacheWaitForCacheSyncBeforeAnyInformer(t *testing.T) {
	inner := &oneInformerCache{inf: newHeldInformer(t)}
	close(inner.inf.release)
	c := newPromptCache(inner)
	if !toolscache.WaitForCacheSync(t.Context().Done(), inner.inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	// Nothing handed out yet: the wrapped cache's check answers.
	got := []any{c.WaitForCacheSync(t.Context()), inner.syncChecks.Load()}
	if diff := cmp.Diff([]any{true, int32(1)}, got); diff != "" {
		t.Fatalf("WaitForCacheSync with no informer handed out: synced, checks of the wrapped cache (-want +got):\n%s", diff)
	}
}

func TestPromptCacheGetInformerContextEnds(t *testing.T) {
	inner := &oneInformerCache{inf: newHeldInformer(t)} // never released
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := newPromptCache(inner).GetInformer(ctx, &corev1.ConfigMap{}); err == nil {
		t.Fatal("GetInformer of an informer that cannot sync returned no error after its context ended")
	}
}

func TestPromptCacheWaitForCacheSync(t *testing.T) {
	tests := []struct {
		name    string
		release bool
		want    bool
	}{
		{name: "true once the informers handed out synced", release: true, want: true},
		{name: "false when the context ends first", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inner := &oneInformerCache{inf: newHeldInformer(t)}
			c := newPromptCache(inner)
			if _, err := c.GetInformer(t.Context(), &corev1.ConfigMap{}, cache.BlockUntilSynced(false)); err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			if tt.release {
				close(inner.inf.release)
			} else {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				cancel()
			}
			got := c.WaitForCacheSync(ctx)
			if got != tt.want {
				t.Fatalf("WaitForCacheSync = %v, want %v", got, tt.want)
			}
			if tt.want && (!inner.inf.HasSynced() || inner.syncChecks.Load() != 0) {
				t.Fatalf("WaitForCacheSync returned true with the informer synced=%v after %d checks of the wrapped cache; want synced, none",
					inner.inf.HasSynced(), inner.syncChecks.Load())
			}
		})
	}
}

// TestPromptInformerHandlerGivenEveryObject: a handler added to a synced informer has been given every
// object when AddEventHandlerWithOptions returns, as a source's first check of it expects.
func TestPromptInformerHandlerGivenEveryObject(t *testing.T) {
	inner := &oneInformerCache{inf: newHeldInformer(t)}
	close(inner.inf.release)
	inf, err := newPromptCache(inner).GetInformer(t.Context(), &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	var adds atomic.Int32
	reg, err := inf.AddEventHandlerWithOptions(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { adds.Add(1) },
	}, toolscache.HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]any{int32(3), true}, []any{adds.Load(), reg.HasSynced()}); diff != "" {
		t.Fatalf("adds given and handler synced when AddEventHandlerWithOptions returned (-want +got):\n%s", diff)
	}
}

// TestPromptCacheIndexField: an index adds its kind's informer to those WaitForCacheSync waits for,
// as the manager's start does before it starts the controllers.
func TestPromptCacheIndexField(t *testing.T) {
	inner := &oneInformerCache{inf: newHeldInformer(t)}
	c := newPromptCache(inner)
	if err := c.IndexField(t.Context(), &corev1.ConfigMap{}, "data", func(client.Object) []string { return nil }); err != nil {
		t.Fatal(err)
	}
	close(inner.inf.release)
	got := []any{c.WaitForCacheSync(t.Context()), inner.inf.HasSynced(), inner.indexes.Load(), inner.syncChecks.Load()}
	if diff := cmp.Diff([]any{true, true, int32(1), int32(0)}, got); diff != "" {
		t.Fatalf("after IndexField: synced, informer synced, indexes added, checks of the wrapped cache (-want +got):\n%s", diff)
	}
}

func TestNewCacheIsPrompt(t *testing.T) {
	c, err := NewCache(&rest.Config{Host: "https://127.0.0.1:1"}, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := c.(*promptCache)
	if !ok || p.started.Load() {
		t.Fatalf("NewCache returned %T (started: %v), want the manager's prompt cache, not started", c, ok && p.started.Load())
	}
	if newPromptCache(c) != p {
		t.Fatal("a Reconciler given a prompt cache wraps it again: it would not wait for the informers of its indexes")
	}
}

// TestPromptCacheBlocksOnlyOnceStarted: the manager's prompt cache (NewCache) does not block a
// GetInformer before the manager starts it (setup code asking for an informer would wait for a sync
// that cannot come), and blocks until synced once it has started.
func TestPromptCacheBlocksOnlyOnceStarted(t *testing.T) {
	inner := &oneInformerCache{inf: newHeldInformer(t)}
	c := managers(inner)
	inf, err := c.GetInformer(t.Context(), &corev1.ConfigMap{})
	if err != nil || inf.HasSynced() {
		t.Fatalf("GetInformer before Start returned synced=%v, err=%v; want the unsynced informer at once", err == nil && inf.HasSynced(), err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- c.Start(ctx) }()
	for !c.started.Load() {
		select {
		case err := <-started:
			t.Fatalf("Start returned %v before the cache counted as started", err)
		default:
		}
		goruntime.Gosched()
	}
	close(inner.inf.release)
	if inf, err = c.GetInformer(t.Context(), &corev1.ConfigMap{}); err != nil || !inf.HasSynced() {
		t.Fatalf("GetInformer after Start returned synced=%v, err=%v; want it synced", err == nil && inf.HasSynced(), err)
	}
}

// managers is the manager's prompt cache around inner as NewCache makes it, before the manager
// starts it; startedManagers is the same once started.
func managers(inner cache.Cache) *promptCache { return &promptCache{Cache: inner} }

func startedManagers(inner cache.Cache) *promptCache {
	c := managers(inner)
	c.started.Store(true)
	return c
}

// TestPromptCacheStartEarly: the manager's own cache (NewCache), before it starts, creates the
// informers a Reconciler names, and the manager's wait is for them (whose list here is held), not the
// wrapped cache's check; a cache that is not the manager's own, or has started, creates none, and a
// kind the wrapped cache cannot make an informer for is left to the controller's watch.
func TestPromptCacheStartEarly(t *testing.T) {
	tests := []struct {
		name string
		// cache makes the prompt cache around inner.
		cache func(inner cache.Cache) *promptCache
		err   error
		// wantGets: GetInformer calls on the wrapped cache; wantChecks: the wrapped cache's sync
		// checks by WaitForCacheSync.
		wantGets, wantChecks int32
	}{
		{name: "the manager's cache before it starts", cache: managers, wantGets: 2},
		{name: "a Reconciler's wrapper of another cache", cache: newPromptCache, wantChecks: 1},
		{name: "the manager's cache once started", cache: startedManagers, wantChecks: 1},
		{name: "kinds without an informer", cache: managers, err: errors.New("no matches for kind"), wantGets: 2, wantChecks: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inner := &oneInformerCache{inf: newHeldInformer(t), err: tt.err} // the list is never released
			c := tt.cache(inner)
			c.startEarly(t.Context(), &corev1.ConfigMap{}, &corev1.Secret{})
			gets := inner.gets.Load()
			ctx, cancel := context.WithCancel(t.Context())
			cancel() // whoever's check it is, it finds the held informer unsynced
			got := []any{gets, inner.syncChecks.Load(), c.WaitForCacheSync(ctx), inner.syncChecks.Load()}
			want := []any{tt.wantGets, int32(0), false, tt.wantChecks}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("GetInformer calls, checks of the wrapped cache before and after WaitForCacheSync, synced (-want +got):\n%s", diff)
			}
		})
	}
}
