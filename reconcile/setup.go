package reconcile

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/internal/seam"
	"github.com/convergo-dev/convergo/status"
)

// defaultPollInterval is how long a deletion that waits for something without a watch event waits
// before looking again.
const defaultPollInterval = 10 * time.Second

// defaultWorkers is how many objects a Reconciler reconciles at once when neither
// WithControllerOptions nor the manager's controller options say: what operators written by
// hand run (a reconcile is mostly round trips to the API server), not controller-runtime's 1.
const defaultWorkers = 4

// defaultDeletionPlaces is how many objects being deleted a Reconciler finalizes at once besides the
// others unless WithDeletionConcurrency says: as many as the garbage collector's workers
// (kube-controller-manager's --concurrent-gc-syncs), which delete the children of owners without a
// finalizer.
const defaultDeletionPlaces = 20

// NewReconciler returns a Reconciler for T calling hooks, using the manager's client (cache reads),
// API reader (authoritative reads), scheme and event recorder. T must be a pointer to a struct type
// registered in the manager's scheme. A configuration error is returned by SetupWithManager (and
// Reconcile).
//
//	r := reconcile.NewReconciler(mgr, reconcile.Hooks[*v1alpha1.Welcome]{Children: children, Status: fill},
//		reconcile.WithOwns(&corev1.ConfigMap{}, &appsv1.Deployment{}, &corev1.Service{}))
func NewReconciler[T status.Object](mgr manager.Manager, hooks Hooks[T], opts ...ReconcilerOption) *Reconciler[T] {
	cfg := reconcilerConfig{pollInterval: defaultPollInterval, deletionConcurrent: defaultDeletionPlaces}
	for _, o := range opts {
		o(&cfg)
	}
	r := &Reconciler[T]{
		children:     hooks.Children,
		cleanup:      hooks.Cleanup,
		suspendedFn:  hooks.Suspended,
		failedFn:     hooks.Failed,
		statusFn:     hooks.Status,
		client:       mgr.GetClient(),
		scheme:       mgr.GetScheme(),
		cache:        mgr.GetCache(),
		poll:         cfg.pollInterval,
		interval:     cfg.interval,
		ctrlOpts:     cfg.controllerOpts,
		summary:      cfg.summary,
		extKinds:     cfg.externalKinds,
		tracer:       tracerOf(cfg.tracerProvider),
		triggers:     newTriggers(),
		deletionConc: cfg.deletionConcurrent,
		watches:      cfg.watches,
		references:   cfg.references,
		watched:      map[schema.GroupVersionKind]client.Object{},
		finalizing:   map[types.NamespacedName]bool{},
	}
	r.initErr = r.init(mgr, cfg)
	return r
}

func (r *Reconciler[T]) init(mgr manager.Manager, cfg reconcilerConfig) error {
	var zero T
	typ := reflect.TypeOf(zero)
	if typ == nil || typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("new reconciler: type %v must be a pointer to a struct", typ)
	}
	r.newObj = func() T { return reflect.New(typ.Elem()).Interface().(T) }
	if r.children == nil {
		return errors.New("new reconciler: Hooks.Children is nil")
	}
	gvk, err := apiutil.GVKForObject(r.newObj(), r.scheme)
	if err != nil {
		return fmt.Errorf("new reconciler for %v: %w", typ, err)
	}
	r.gvk = gvk
	r.name = cfg.name
	if r.name == "" {
		r.name = strings.ToLower(gvk.Kind)
	}
	r.finalizer = cfg.finalizer
	if r.finalizer == "" {
		if gvk.Group != "" {
			r.finalizer = gvk.Group + "/finalizer"
		} else {
			r.finalizer = "convergo.dev/" + r.name
		}
	}
	base := mgr.GetClient()
	r.shard = cfg.shard
	if r.shard != nil {
		base = r.shard.Client(base)
	}
	writer := client.WithFieldOwner(base, r.name)
	r.client = writer
	applierOpts := []apply.Option{apply.WithFieldManager(r.name), apply.WithConnection(mgr.GetConfig(), mgr.GetHTTPClient())}
	if r.shard != nil {
		applierOpts = append(applierOpts, apply.WithWriteGuard(r.shard.Writable))
	}
	r.applier = apply.NewApplier(base, mgr.GetAPIReader(), append(applierOpts, cfg.applierOpts...)...)
	if r.members = cfg.members; r.members != nil {
		seam.Of(r.applier).SetMembers(r.members.Get, r.members.Names)
	}
	r.apiReader = mgr.GetAPIReader()
	r.patcher = status.NewPatcher(writer, status.WithAPIReader(r.apiReader))
	r.recorder = cfg.recorder
	r.changeEvents = cfg.changeEvents
	if r.recorder == nil {
		r.recorder = mgr.GetEventRecorder(r.name)
	}
	r.wake = newChildWatch(gvk.GroupKind(), cfg.everyChildChange)
	r.handler = r.wake.handler(ownership.EnqueueTrackedOwner(r.newObj(), r.scheme))
	r.counts = newChildCounts()
	r.metrics = newReconcilerMetrics(r.name)
	for _, o := range cfg.owns {
		gvk, err := apiutil.GVKForObject(o, r.scheme)
		if err != nil {
			return fmt.Errorf("new reconciler %s: WithOwns(%T): %w", r.name, o, err)
		}
		if !r.hasType(gvk) {
			r.owns = append(r.owns, o)
		}
	}
	return nil
}

func (r *Reconciler[T]) hasType(gvk schema.GroupVersionKind) bool {
	for _, o := range r.owns {
		if g, err := apiutil.GVKForObject(o, r.scheme); err == nil && g == gvk {
			return true
		}
	}
	return false
}

// Name returns the controller name.
func (r *Reconciler[T]) Name() string { return r.name }

// Finalizer returns the finalizer name the Reconciler adds to every T.
func (r *Reconciler[T]) Finalizer() string { return r.finalizer }

// SetupWithManager registers the controller: it watches T (spec, label, annotation and deletion
// changes; status-only updates do not trigger it), every WithOwns type and every WithWatches and
// WithReferences watch.
// A child's creation and deletion always wake its owner; an update only when something the owner
// applied may have changed (anything but the status, resourceVersion and managedFields) or when the
// child's ReadyWhen check, as the owner's last reconcile used it, judges the new object otherwise
// (ready, reason), and never for the very version that reconcile judged (the answer to its own write),
// unless WithEveryChildChange is given. Children are mapped to their owner through
// the tracking labels every child carries
// (ownership.EnqueueTrackedOwner), which covers children with an owner reference as well as
// cluster-scoped and cross-namespace ones.
func (r *Reconciler[T]) SetupWithManager(mgr manager.Manager) error {
	if r.initErr != nil {
		return r.initErr
	}
	if err := r.addReferences(mgr); err != nil {
		return fmt.Errorf("set up controller %s: %w", r.name, err)
	}
	opts := r.controllerOptions()
	others := r.concurrency(mgr)
	opts.MaxConcurrentReconciles = others
	if r.deletionConc > 0 {
		r.gate = newWorkerGate(others, r.deletionConc)
		r.gate.waited = r.metrics.placeTaken
		opts.MaxConcurrentReconciles = others + r.deletionConc
	}
	b := builder.ControllerManagedBy(mgr).
		Named(r.name).
		For(r.newObj(), builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{},
			predicate.LabelChangedPredicate{},
			predicate.AnnotationChangedPredicate{},
			deletionStarted(),
		), r.triggers.ownEvents())).
		WithOptions(opts).
		// Tells the record of our own writes which versions the cache holds; it enqueues nothing.
		WatchesRawSource(source.Kind(r.cache, client.Object(r.newObj()), seam.Of(r.applier).Observer(r.gvk.GroupKind())))
	r.mu.Lock()
	for _, o := range r.owns {
		gvk, _ := apiutil.GVKForObject(o, r.scheme)
		r.watched[gvk] = o
		b = b.Watches(o, r.triggers.noting(triggerChild, gvk.Kind, r.counts.handler(gvk.GroupKind(), r.handler)))
	}
	r.mu.Unlock()
	for _, w := range r.watches {
		gvk, _ := apiutil.GVKForObject(w.obj, r.scheme)
		b = b.Watches(w.obj, r.triggers.noting(triggerWatch, gvk.Kind, w.handler), w.opts...)
	}
	if r.shard != nil {
		b = b.WatchesRawSource(source.Channel(r.shard.Events(), r.triggers.noting(triggerShard, "", &handler.EnqueueRequestForObject{})))
	}
	if err := r.createInformers(mgr); err != nil {
		return fmt.Errorf("set up controller %s: %w", r.name, err)
	}
	c, err := b.Build(observed{next: r})
	if err != nil {
		return fmt.Errorf("set up controller %s: %w", r.name, err)
	}
	r.mu.Lock()
	r.controller = c
	r.mu.Unlock()
	r.setupMembers(context.Background())
	return nil
}

// createInformers asks the manager's cache, through its public GetInformer, for the informers of T, of
// every WithOwns type and of every WithWatches watch before the manager starts: they then start with
// the cache and list together, so that the controller finds them synced when it starts instead of
// creating them one by one and waiting for each. Once the manager runs, it asks for nothing.
func (r *Reconciler[T]) createInformers(mgr manager.Manager) error {
	objs := append([]client.Object{r.newObj()}, r.owns...)
	for _, w := range r.watches {
		if obj, ok := w.cached(r.scheme); ok {
			objs = append(objs, obj)
		}
	}
	for _, obj := range objs {
		if _, err := mgr.GetCache().GetInformer(context.Background(), obj, cache.BlockUntilSynced(false)); err != nil {
			return fmt.Errorf("informer of %T: %w", obj, err)
		}
	}
	return nil
}

// controllerOptions returns the controller's options as WithControllerOptions set them.
func (r *Reconciler[T]) controllerOptions() controller.Options {
	var opts controller.Options
	for _, f := range r.ctrlOpts {
		f(&opts)
	}
	return opts
}

// concurrency returns how many objects the controller reconciles at once (besides those being
// deleted): the Reconciler's own number, else the manager's for T's kind, else its default, else
// defaultWorkers.
func (r *Reconciler[T]) concurrency(mgr manager.Manager) int {
	if n := r.controllerOptions().MaxConcurrentReconciles; n > 0 {
		return n
	}
	opts := mgr.GetControllerOptions()
	if n := opts.GroupKindConcurrency[r.gvk.GroupKind().String()]; n > 0 {
		return n
	}
	if opts.MaxConcurrentReconciles > 0 {
		return opts.MaxConcurrentReconciles
	}
	return defaultWorkers
}

// deletionStarted passes updates that set the deletion timestamp (the API server also bumps the
// generation then, but this does not rely on it).
func deletionStarted() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld != nil && e.ObjectNew != nil &&
				e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
