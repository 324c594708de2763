package reconcile

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// A controller starts its workers once every watch has synced: its informer has listed the objects
// and its event handler has been given them all. controller-runtime's sources wait for both by
// checking every 100 ms (client-go's WaitForCacheSync), three times in a row, so a controller whose
// informers sync in a few milliseconds still starts 200 to 300 ms late, after every restart or
// leader change. The Reconciler hands its sources a cache whose waits are woken by the informers
// themselves (client-go's DoneCheckers): the same waits, ended when the informer or the handler says
// it is done instead of at the next tick.

// handlerSyncWait bounds how long adding an event handler to a synced informer waits for the handler
// to be given every object (see promptInformer); after it the source's own check takes over.
const handlerSyncWait = 10 * time.Second

// promptManager is a manager whose cache is prompt: the controller builder takes its sources' cache
// from it. Everything else is the manager's.
type promptManager struct {
	manager.Manager
	cache *promptCache
}

// GetCache returns the prompt cache.
func (m promptManager) GetCache() cache.Cache { return m.cache }

// promptCache is a cache whose waits for informers to sync end when the informers report it. Its
// reads, indexes and informers are the wrapped cache's.
type promptCache struct {
	cache.Cache

	// started is set once the wrapped cache starts (or from the beginning, for a Reconciler's sources,
	// which start after the manager's caches): GetInformer blocks only then, as the wrapped cache does,
	// so that setup code asking for an informer before the manager starts does not wait for a sync
	// that cannot come.
	started atomic.Bool

	mu sync.Mutex
	// handedOut holds the informers GetInformer returned, which WaitForCacheSync waits for.
	handedOut []cache.Informer
}

// NewCache builds the manager's cache (manager.Options.NewCache) with controller-runtime's cache.New,
// and makes its waits for informers to sync end when the informers report it instead of at the next
// 100-ms check: the manager starts its controllers as soon as the informers created during setup (for
// a field index) have listed. The Reconciler's own watches wait that way with any cache. With it, a
// Reconciler's informers (its kind's and its children's) start with the manager and list together,
// instead of once a field index's informer has synced.
//
// Its informers whose transform is LeanCache's (every kind but SlimCache's children, with LeanCache
// or SlimCache) never decode managedFields, which that transform drops first: the cache's HTTP client
// removes them from the JSON of their lists and watches (a custom resource's; built-in kinds come in
// protobuf, left as it is). A custom resource's JSON is decoded field by field, in several passes, and
// managedFields are often half of it. A transform of the caller's that wraps LeanCache's sees no
// managedFields either.
//
// Its lists and watches ask the API server for answers without gzip, as kube-controller-manager and
// kube-scheduler do (they set rest.Config.DisableCompression). Go's HTTP transport asks for gzip
// unless told otherwise, and the API server then compresses a watch that begins with a list
// (client-go's informers start that way) and every event it sends after it, each on its own: CPU on
// both ends that buys nothing next to the API server. An operator that reaches its API server over a
// slow network keeps gzip with WithCompression (NewCacheWith). The manager's other requests are left
// as they are (an answer under 128 KiB is never compressed).
//
// The cache also remembers the mappings of the RESTMapper it is given (a manager always gives its
// own): a cache restricted to namespaces (cache.Options.DefaultNamespaces) asks on every read whether
// the kind is namespaced, and controller-runtime's RESTMapper took longer to answer than the read
// took. A mapping is remembered once found, as controller-runtime's mapper does until a kind is
// missing.
//
//	opts := ctrl.Options{NewCache: reconcile.NewCache}
func NewCache(config *rest.Config, opts cache.Options) (cache.Cache, error) {
	return newCache(config, opts, cacheConfig{})
}

// CacheOption configures the cache NewCacheWith builds.
type CacheOption func(*cacheConfig)

// cacheConfig holds NewCacheWith's options; its zero value is NewCache's.
type cacheConfig struct {
	// compressed: lists and watches accept gzip (WithCompression).
	compressed bool
}

// WithCompression makes the cache's lists and watches accept gzip-compressed answers, as client-go
// does by default, for an operator that reaches its API server over a slow network (from another
// region, or a management cluster watching remote ones), where bytes cost more than CPU.
func WithCompression() CacheOption {
	return func(c *cacheConfig) { c.compressed = true }
}

// NewCacheWith returns NewCache configured by opts, for manager.Options.NewCache.
//
//	opts := ctrl.Options{NewCache: reconcile.NewCacheWith(reconcile.WithCompression())}
func NewCacheWith(opts ...CacheOption) cache.NewCacheFunc {
	var cfg cacheConfig
	for _, o := range opts {
		o(&cfg)
	}
	return func(config *rest.Config, cacheOpts cache.Options) (cache.Cache, error) {
		return newCache(config, cacheOpts, cfg)
	}
}

// newCache is NewCache with cfg.
func newCache(config *rest.Config, opts cache.Options, cfg cacheConfig) (cache.Cache, error) {
	if opts.Mapper != nil {
		opts.Mapper = newMappingMemo(opts.Mapper)
	}
	if opts.HTTPClient == nil {
		hc, err := rest.HTTPClientFor(config)
		if err != nil {
			return nil, fmt.Errorf("new cache: http client: %w", err)
		}
		opts.HTTPClient = hc
	}
	opts.HTTPClient = leanWireClient(opts.HTTPClient, cfg.compressed)
	if opts.Scheme == nil {
		opts.Scheme = scheme.Scheme // as cache.New defaults it
	}
	opts.NewInformer = leanWireInformers(opts.NewInformer, opts.Scheme)
	c, err := cache.New(config, opts)
	if err != nil {
		return nil, err
	}
	return &promptCache{Cache: c}, nil
}

// newPromptCache wraps c, the cache of a Reconciler's sources, unless it is prompt already.
func newPromptCache(c cache.Cache) *promptCache {
	if p, ok := c.(*promptCache); ok {
		return p
	}
	p := &promptCache{Cache: c}
	p.started.Store(true) // the sources start after the manager's caches
	return p
}

// Start starts the wrapped cache; GetInformer blocks from then on.
func (c *promptCache) Start(ctx context.Context) error {
	c.started.Store(true)
	return c.Cache.Start(ctx)
}

// IndexField adds the index to the wrapped cache, whose informer for obj WaitForCacheSync then waits for.
func (c *promptCache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	if _, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
		return err
	}
	return c.Cache.IndexField(ctx, obj, field, extract)
}

// startEarly creates the informers of objs (of a Reconciler: its own kind and its children's) before
// the manager starts, when c is the manager's cache (NewCache), so that they start with it and list
// at the same time. Otherwise a field index's informer (created during setup) is listed first, and
// the controllers, whose watches create the others, start only once it has synced: at a restart of
// 1000 Welcomes in the bench the children's lists began 120 ms late. The manager waits for these
// informers as for an index's before it starts the controllers, which wait for them anyway. So, as
// with an index's, an informer that cannot list (RBAC) holds the controllers back while its
// reflector logs why at every retry, where a watch's would fail its controller once
// CacheSyncTimeout ended. A kind the cache cannot make an informer for (a CRD not installed) is left
// to the controller's watch, which reports it. The informers run, as an index's does, on a replica
// that waits for leadership, which then takes over without listing. Any other cache is left alone:
// the manager's start would check every informer in it every 100 ms.
func (c *promptCache) startEarly(ctx context.Context, objs ...client.Object) {
	if c.started.Load() { // started, or a Reconciler's wrapper of another cache (see newPromptCache)
		return
	}
	for _, obj := range objs {
		_, _ = c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	}
}

// GetInformer returns the wrapped cache's informer for obj. Once the cache has started, unless told
// not to block (cache.BlockUntilSynced(false)), it returns once the informer has synced, or with an
// error when ctx ends first.
func (c *promptCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	var o cache.InformerGetOptions
	for _, opt := range opts {
		opt(&o)
	}
	inf, err := c.Cache.GetInformer(ctx, obj, append(opts, cache.BlockUntilSynced(false))...)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if !slices.Contains(c.handedOut, inf) {
		c.handedOut = append(c.handedOut, inf)
	}
	c.mu.Unlock()
	if c.started.Load() && (o.BlockUntilSynced == nil || *o.BlockUntilSynced) {
		if !toolscache.WaitFor(ctx, "", inf.HasSyncedChecker()) {
			return nil, fmt.Errorf("wait for the informer of %T to sync: %w", obj, context.Cause(ctx))
		}
	}
	return promptInformer{Informer: inf}, nil
}

// WaitForCacheSync waits until every informer GetInformer returned has synced. Before GetInformer
// returned any, it is the wrapped cache's check (of every informer it has, every 100 ms). It does not
// wait for informers others asked the wrapped cache for: a source calls it after its own informer
// synced, and its check of the whole cache would otherwise wait a tick for each informer the other
// sources are still listing.
func (c *promptCache) WaitForCacheSync(ctx context.Context) bool {
	c.mu.Lock()
	checkers := make([]toolscache.DoneChecker, 0, len(c.handedOut))
	for _, inf := range c.handedOut {
		checkers = append(checkers, inf.HasSyncedChecker())
	}
	c.mu.Unlock()
	if len(checkers) == 0 {
		return c.Cache.WaitForCacheSync(ctx)
	}
	return toolscache.WaitFor(ctx, "", checkers...)
}

// promptInformer is an informer whose new event handlers, once it has synced, have been given every
// object when AddEventHandlerWithOptions returns (for at most handlerSyncWait), so that the source's
// check of its handler finds it synced at its first look.
type promptInformer struct {
	cache.Informer
}

// AddEventHandlerWithOptions adds h and, when the informer has synced, waits until h has been given
// every object the informer holds.
func (i promptInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, opts toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	reg, err := i.Informer.AddEventHandlerWithOptions(h, opts)
	if err != nil || !i.HasSynced() {
		return reg, err
	}
	timer := time.NewTimer(handlerSyncWait)
	defer timer.Stop()
	select {
	case <-reg.HasSyncedChecker().Done():
	case <-timer.C:
	}
	return reg, nil
}
