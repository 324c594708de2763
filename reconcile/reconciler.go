package reconcile

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/convergo-dev/convergo/finalizer"
	"github.com/convergo-dev/convergo/internal/kobj"
	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/sharding"
	"github.com/convergo-dev/convergo/status"
)

// Condition reasons the Reconciler writes.
const (
	// ReasonReconciled: Ready=True, every child is applied and ready.
	ReasonReconciled = "Reconciled"
	// ReasonWaitingForDependencies: some child is held back until the children it depends on are ready.
	ReasonWaitingForDependencies = "WaitingForDependencies"
	// ReasonProgressing: every child is applied, some are not ready yet.
	ReasonProgressing = "Progressing"
	// ReasonReconcileError: a transient error no node's step names; the reconcile is retried with
	// backoff.
	ReasonReconcileError = "ReconcileError"
	// ReasonObserveFailed, ReasonApplyFailed, ReasonDeleteFailed: a node's step failed (a
	// graph.NodeError): Reconciling=True, the message naming the node and the error; retried with
	// backoff.
	ReasonObserveFailed = "ObserveFailed"
	ReasonApplyFailed   = "ApplyFailed"
	ReasonDeleteFailed  = "DeleteFailed"
	// ReasonInvalidSpec: the default reason of an *InvalidSpecError (Stalled=True, no retry).
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonInvalidGraph: the children graph is invalid (Graph.Validate failed): Stalled=True.
	ReasonInvalidGraph = "InvalidGraph"
	// ReasonDeleting: the object is being deleted and waits for its children or its cleanup.
	ReasonDeleting = "Deleting"
	// ReasonDeletionFailed: a step of the deletion (deleting the children, the Cleanup hook) failed:
	// Reconciling=True (Stalled=True when the error is terminal), the message naming the step and the
	// error. The next pass that gets further replaces it.
	ReasonDeletionFailed = "DeletionFailed"
	// ReasonNotOwned: a child exists that is not this object's (another owner controls it, it existed
	// before, or KeepOnDelete released it), and it is never taken without opt-in: Stalled=True, the
	// message naming the child and what to do. Retried with backoff, since deleting that child by hand
	// sends this object no event.
	ReasonNotOwned = "NotOwned"
	// ReasonTerminalError: a hook returned controller-runtime's reconcile.TerminalError: Stalled=True,
	// not retried until the object changes.
	ReasonTerminalError = "TerminalError"
)

// defaultPollInterval is how long a deletion that waits for something without a watch event waits
// before looking again.
const defaultPollInterval = 10 * time.Second

// defaultWorkers is how many objects a Reconciler reconciles at once when neither
// WithMaxConcurrentReconciles nor the manager's controller options say: what operators written by
// hand run (a reconcile is mostly round trips to the API server), not controller-runtime's 1.
const defaultWorkers = 4

// defaultDeletionPlaces is how many objects being deleted a Reconciler finalizes at once besides the
// others unless WithDeletionConcurrency says: as many as the garbage collector's workers
// (kube-controller-manager's --concurrent-gc-syncs), which delete the children of owners without a
// finalizer.
const defaultDeletionPlaces = 20

// Object is what a Reconciler reconciles: an API object whose status carries conditions (see
// status.Object), such as *v1alpha1.Memcached with GetConditions/SetConditions.
type Object interface {
	status.Object
}

// InvalidSpecError reports a spec that cannot be reconciled until it changes. The Reconciler turns it
// into Stalled=True (with Reason), a Warning event, and no requeue.
type InvalidSpecError struct {
	// Reason is the condition reason, CamelCase; empty means ReasonInvalidSpec.
	Reason string
	// Err describes what is wrong.
	Err error
}

// Error returns the description of what is wrong.
func (e *InvalidSpecError) Error() string {
	if e.Err == nil {
		return "invalid spec"
	}
	return e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *InvalidSpecError) Unwrap() error { return e.Err }

func (e *InvalidSpecError) reason() string {
	if e.Reason == "" {
		return ReasonInvalidSpec
	}
	return e.Reason
}

// Invalid returns an *InvalidSpecError with a formatted message (%w wraps as with fmt.Errorf).
func Invalid(format string, args ...any) error {
	return &InvalidSpecError{Err: fmt.Errorf(format, args...)}
}

// ReconcilerOption configures NewReconciler. (The package's apply.Option type configures the Applier;
// pass those through WithApplierOptions.)
type ReconcilerOption func(*reconcilerConfig)

type reconcilerConfig struct {
	name          string
	finalizer     string
	owns          []client.Object
	applierOpts   []apply.Option
	maxConcurrent int
	recorder      events.EventRecorder
	changeEvents  bool
	pollInterval  time.Duration
	watches       []extraWatch
	observer      reconcileObserver
	rateLimiter   workqueue.TypedRateLimiter[ctrl.Request]
	shard         *sharding.Shard
	// everyChildChange: every child update wakes the owner (WithEveryChildChange).
	everyChildChange bool
	// deletionConcurrent is WithDeletionConcurrency's number.
	deletionConcurrent int
	// interval is WithInterval's.
	interval time.Duration
	// controllerOpts are WithControllerOptions'.
	controllerOpts []func(*controller.Options)
	// summary is WithConditions'.
	summary *status.Summary
	// externalKinds are WithExternalKinds', as graph options.
	externalKinds []graph.Option
}

// extraWatch is a watch added with WithWatches.
type extraWatch struct {
	obj     client.Object
	handler handler.EventHandler
	opts    []builder.WatchesOption
}

// cached returns the object whose informer the builder makes for w: a metav1.PartialObjectMetadata of
// w's kind for a metadata-only watch (builder.OnlyMetadata), else w's object; false when w's kind is
// not in scheme (the builder reports that).
func (w extraWatch) cached(scheme *runtime.Scheme) (client.Object, bool) {
	if !slices.ContainsFunc(w.opts, func(o builder.WatchesOption) bool { return o == builder.OnlyMetadata }) {
		return w.obj, true
	}
	gvk, err := apiutil.GVKForObject(w.obj, scheme)
	if err != nil {
		return nil, false
	}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(gvk)
	return meta, true
}

// WithWatches adds a watch on objects that are not children, such as a Secret the spec refers to:
// handler maps an event to the requests of the objects to reconcile, opts are passed to the
// controller builder (e.g. builder.OnlyMetadata to keep Secret data out of the cache). It may be
// given several times.
//
//	reconcile.WithWatches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(welcomesNaming), builder.OnlyMetadata)
func WithWatches(obj client.Object, h handler.EventHandler, opts ...builder.WatchesOption) ReconcilerOption {
	return func(c *reconcilerConfig) {
		c.watches = append(c.watches, extraWatch{obj: obj, handler: h, opts: opts})
	}
}

// WithName sets the controller name, used for logs, metrics, events, the field manager of every
// write, and the default finalizer. Default: the lower-case kind of T.
func WithName(name string) ReconcilerOption { return func(c *reconcilerConfig) { c.name = name } }

// WithFinalizer sets the finalizer name. Default: "<group of T>/finalizer", e.g.
// "cache.convergo.dev/finalizer" ("convergo.dev/<name>" for core types).
func WithFinalizer(name string) ReconcilerOption {
	return func(c *reconcilerConfig) { c.finalizer = name }
}

// WithOwns declares the child types the controller creates (empty objects such as &appsv1.Deployment{}).
// They are watched from the start, so a change to a child wakes its owner (an update only when it may
// matter to the owner, see WithEveryChildChange), and they are pruned even
// after the graph stops declaring the type altogether. Child types a graph declares but WithOwns does
// not are watched from the first reconcile that declares them; declare every type here to be safe
// across restarts.
func WithOwns(objs ...client.Object) ReconcilerOption {
	return func(c *reconcilerConfig) { c.owns = append(c.owns, objs...) }
}

// WithExternalKinds declares the kinds of external objects the Children hook's graphs declare, so
// that an object whose graph cannot be built while it is deleted (an invalid spec, a referenced
// Secret gone) still has its external objects deleted, in order (see graph.DeleteByMarks). Without
// it such a deletion waits, finalizer in place, with a DeletionFailed condition naming the kind,
// until the spec is fixed.
func WithExternalKinds[S any](kinds ...graph.External[S]) ReconcilerOption {
	return func(c *reconcilerConfig) {
		c.externalKinds = append(c.externalKinds, graph.WithExternalKinds(kinds...))
	}
}

// WithApplierOptions passes options to the Reconciler's Applier (apply.WithAdoptOrphans,
// apply.WithRecreateOnImmutable, apply.WithFieldManager; the field manager defaults to the controller
// name).
func WithApplierOptions(opts ...apply.Option) ReconcilerOption {
	return func(c *reconcilerConfig) { c.applierOpts = append(c.applierOpts, opts...) }
}

// WithControllerOptions lets f adjust the options of the controller SetupWithManager builds
// (controller-runtime's controller.Options: ReconciliationTimeout, RecoverPanic, NeedLeaderElection,
// SkipNameValidation, LogConstructor...), after the Reconciler set its own (MaxConcurrentReconciles,
// RateLimiter), which f may change too. It may be given several times.
//
//	reconcile.WithControllerOptions(func(o *controller.Options) { o.ReconciliationTimeout = time.Minute })
func WithControllerOptions(f func(*controller.Options)) ReconcilerOption {
	return func(c *reconcilerConfig) { c.controllerOpts = append(c.controllerOpts, f) }
}

// WithMaxConcurrentReconciles sets how many objects are reconciled at once (one object is never
// reconciled twice at the same time). Default: the manager's Controller.MaxConcurrentReconciles
// (ctrl.Options.Controller) or GroupKindConcurrency when set, else 4 (controller-runtime's own
// default is 1, which no operator written by hand keeps). Raising it is safe: children are written with
// server-side apply, and a reconcile that starts before the cache shows the Reconciler's own last
// write to the object works on what that write returned, so it does not repeat the write or conflict.
func WithMaxConcurrentReconciles(n int) ReconcilerOption {
	return func(c *reconcilerConfig) { c.maxConcurrent = n }
}

// WithDeletionConcurrency gives the objects being deleted n places of their own: up to n of them are
// finalized at once, besides the objects reconciled at once otherwise (WithMaxConcurrentReconciles),
// which wait for one of their own places. A deletion pass is mostly round trips in a row (a layer of
// children, the next once it is gone, the finalizer), and the garbage collector, which deletes the
// children of owners that have no finalizer, runs 20 workers (kube-controller-manager's
// --concurrent-gc-syncs). Default 20, as many; 0: deletions share the workers.
//
// The controller runs both numbers of workers on one queue, so an object is still never reconciled
// twice at once; controller-runtime's worker metrics count them all, and a reconcile's time includes
// its wait for a place.
func WithDeletionConcurrency(n int) ReconcilerOption {
	return func(c *reconcilerConfig) { c.deletionConcurrent = n }
}

// WithEventRecorder replaces the manager's event recorder (mgr.GetEventRecorder(name)), e.g. with
// events.NewFakeRecorder in tests.
func WithEventRecorder(rec events.EventRecorder) ReconcilerOption {
	return func(c *reconcilerConfig) { c.recorder = rec }
}

// WithChangeEvents makes the Reconciler record routine changes as Normal events too: a
// ChildrenApplied event for every reconcile that created or updated children (by default only for
// those that recreated or pruned some), and a ChildrenDeleted event for every deletion pass that
// deleted children, so that `kubectl get events` shows the teardown order. Each event is one more API
// request: a new object then costs one or two requests more, and a deletion one more per pass
// (a fifth more than its DELETEs and the finalizer removal); turn it on where a change history is
// worth that. Conditions, logs and the metric convergo_child_operations_total record these changes
// either way.
func WithChangeEvents() ReconcilerOption {
	return func(c *reconcilerConfig) { c.changeEvents = true }
}

// WithRateLimiter sets how long an object waits before it is reconciled again after an error or a
// requeue. Without it the controller uses controller-runtime's default
// (workqueue.DefaultTypedControllerRateLimiter): per object, an exponential backoff from 5 ms doubling up
// to 1000 s, reset when a reconcile succeeds; overall, a token bucket of 10 per second with bursts of
// 100. An operator whose reconciles call slow external systems may want a longer first step:
//
//	reconcile.WithRateLimiter(workqueue.NewTypedItemExponentialFailureRateLimiter[ctrl.Request](time.Second, 5*time.Minute))
func WithRateLimiter(l workqueue.TypedRateLimiter[ctrl.Request]) ReconcilerOption {
	return func(c *reconcilerConfig) { c.rateLimiter = l }
}

// WithPollInterval sets how long a deletion waits before looking again when it waits for something
// that may not produce a watch event (children of unwatched types, the cleanup hook). Default 10s.
func WithPollInterval(d time.Duration) ReconcilerOption {
	return func(c *reconcilerConfig) { c.pollInterval = d }
}

// Reconciler is a generic controller for T: it keeps T's children (a Graph built by Hooks.Children)
// applied, prunes the ones no longer declared, reports progress in T's conditions, and on deletion
// removes the children in reverse order, runs the cleanup hook and only then releases the finalizer.
//
// One reconcile runs these steps:
//
//  1. get T from the cache (not found: done), or what the Reconciler's own last write to T returned
//     while the cache still shows a version that write superseded;
//  2. being deleted: delete the graph in reverse order, run the cleanup hook, remove the finalizer;
//  3. ensure the finalizer;
//  4. build the graph (an *InvalidSpecError or an invalid graph stalls the object);
//  5. apply the children in dependency order (server-side apply only on drift);
//  6. once everything is ready, prune children no longer declared;
//  7. run the Status hook and set Ready / Reconciling / Stalled;
//  8. patch the status only if it changed.
//
// A converged object reconciled again makes no API request beyond cache reads. Create one with
// NewReconciler and register it with SetupWithManager.
//
// Events (events.k8s.io, about T) are few, since each costs a request: at most one Normal event per
// reconcile, EventReasonChildrenApplied, when children were recreated or pruned (with
// WithChangeEvents also when they were only created or updated, and during deletion one Normal
// EventReasonChildrenDeleted per pass that deleted children, so the events show the teardown order;
// conditions, logs and the metric already tell those routine changes); Warning events when an invalid spec or a reconcile error first
// shows in the conditions (with the condition's reason) and when a deletion step fails
// (EventReasonDeleteFailed, EventReasonCleanupFailed). The metric convergo_child_operations_total
// counts every child operation.
type Reconciler[T Object] struct {
	name     string
	gvk      schema.GroupVersionKind
	newObj   func() T
	children func(context.Context, T) (*graph.Graph, error)
	client   client.Client
	scheme   *runtime.Scheme
	// cache is the manager's, for the controller's sources.
	cache     cache.Cache
	applier   *apply.Applier
	patcher   *status.Patcher
	apiReader client.Reader
	recorder  events.EventRecorder
	// changeEvents: emit ChildrenApplied for created and updated children too (WithChangeEvents).
	changeEvents bool
	finalizer    string
	cleanup      func(context.Context, T) (bool, error)
	statusFn     func(context.Context, T, *graph.Result) error
	suspendedFn  func(T) bool
	failedFn     func(context.Context, T, error)
	owns         []client.Object
	watches      []extraWatch
	observer     reconcileObserver
	rateLimiter  workqueue.TypedRateLimiter[ctrl.Request]
	poll         time.Duration
	interval     time.Duration
	ctrlOpts     []func(*controller.Options)
	summary      *status.Summary
	extKinds     []graph.Option // WithExternalKinds'
	maxConc      int
	// deletionConc is WithDeletionConcurrency's number; gate, set up with the controller when it is
	// above 0, holds the places of both lanes.
	deletionConc int
	gate         *workerGate
	metrics      *reconcilerMetrics
	initErr      error
	// shard is set by WithSharding.
	shard *sharding.Shard

	mu         sync.Mutex
	controller controller.Controller
	handler    handler.EventHandler
	// wake decides which child updates wake the owner (see childWatch).
	wake *childWatch
	// counts tells a prune which kinds it need not list (see childCounts).
	counts     *childCounts
	watched    map[schema.GroupVersionKind]client.Object
	finalizing map[types.NamespacedName]bool
}

// Hooks are the functions a Reconciler calls for T, typed by the compiler: a hook written for another
// type does not compile. Children is required; Status and Cleanup are optional.
type Hooks[T Object] struct {
	// Children builds the graph of obj's desired children from its spec. It is called on every
	// reconcile (and during deletion, to delete in reverse order) and must not modify obj. Return an
	// error made with Invalid (or controller-runtime's TerminalError) for a spec that can never work as
	// it is: the object becomes Stalled and is not retried until it changes. Any other error is retried
	// with backoff.
	Children func(ctx context.Context, obj T) (*graph.Graph, error)
	// Status fills status fields of obj from the apply result (e.g. readyReplicas from the live
	// Deployment in res.Child("deployment").Object). It runs after every successful apply; the
	// Reconciler sets the conditions afterwards and writes the status only if it changed. An error made
	// with Invalid stalls the object; any other error is retried.
	Status func(ctx context.Context, obj T, res *graph.Result) error
	// Cleanup runs during deletion after every child is gone and before the finalizer is removed, for
	// what lives outside the cluster. It reports done=false while work remains; the object is then looked
	// at again after the poll interval. It must be idempotent.
	Cleanup func(ctx context.Context, obj T) (done bool, err error)
	// Suspended reports whether obj's reconciliation is suspended by its spec (e.g. spec.suspend), in
	// addition to SuspendAnnotation, which always works. See SuspendAnnotation for what suspension does.
	Suspended func(obj T) bool
	// Failed runs when a reconcile fails (a transient error, an invalid spec, a Status hook's error),
	// before the Reconciler sets its own conditions and writes the status: set your own conditions
	// there (Degraded=True, say), and they are written with the same patch. err is what failed.
	Failed func(ctx context.Context, obj T, err error)
}

// NewReconciler returns a Reconciler for T calling hooks, using the manager's client (cache reads),
// API reader (authoritative reads), scheme and event recorder. T must be a pointer to a struct type
// registered in the manager's scheme. A configuration error is returned by SetupWithManager (and
// Reconcile).
//
//	r := reconcile.NewReconciler(mgr, reconcile.Hooks[*v1alpha1.Welcome]{Children: children, Status: fill},
//		reconcile.WithOwns(&corev1.ConfigMap{}, &appsv1.Deployment{}, &corev1.Service{}))
func NewReconciler[T Object](mgr manager.Manager, hooks Hooks[T], opts ...ReconcilerOption) *Reconciler[T] {
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
		maxConc:      cfg.maxConcurrent,
		deletionConc: cfg.deletionConcurrent,
		watches:      cfg.watches,
		observer:     cfg.observer,
		rateLimiter:  cfg.rateLimiter,
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
// changes; status-only updates do not trigger it), every WithOwns type and every WithWatches watch.
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
	opts := controller.Options{MaxConcurrentReconciles: r.maxConc, RateLimiter: r.rateLimiter}
	for _, f := range r.ctrlOpts {
		f(&opts)
	}
	r.maxConc = opts.MaxConcurrentReconciles
	others := r.concurrency(mgr)
	opts.MaxConcurrentReconciles = others
	if r.deletionConc > 0 {
		r.gate = newWorkerGate(others, r.deletionConc)
		opts.MaxConcurrentReconciles = others + r.deletionConc
	}
	b := builder.ControllerManagedBy(mgr).
		Named(r.name).
		For(r.newObj(), builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{},
			predicate.LabelChangedPredicate{},
			predicate.AnnotationChangedPredicate{},
			deletionStarted(),
		))).
		WithOptions(opts).
		// Tells the record of our own writes which versions the cache holds; it enqueues nothing.
		WatchesRawSource(source.Kind(r.cache, client.Object(r.newObj()), r.applier.Observer(r.gvk.GroupKind())))
	r.mu.Lock()
	for _, o := range r.owns {
		gvk, _ := apiutil.GVKForObject(o, r.scheme)
		r.watched[gvk] = o
		b = b.Watches(o, r.counts.handler(gvk.GroupKind(), r.handler))
	}
	r.mu.Unlock()
	for _, w := range r.watches {
		b = b.Watches(w.obj, w.handler, w.opts...)
	}
	if r.shard != nil {
		b = b.WatchesRawSource(source.Channel(r.shard.Events(), &handler.EnqueueRequestForObject{}))
	}
	if err := r.createInformers(mgr); err != nil {
		return fmt.Errorf("set up controller %s: %w", r.name, err)
	}
	var rec ctrlreconcile.Reconciler = r
	if r.observer != nil {
		rec = observed{next: r, observer: r.observer}
	}
	c, err := b.Build(rec)
	if err != nil {
		return fmt.Errorf("set up controller %s: %w", r.name, err)
	}
	r.mu.Lock()
	r.controller = c
	r.mu.Unlock()
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

// concurrency returns how many objects the controller reconciles at once (besides those being
// deleted): the Reconciler's own number, else the manager's for T's kind, else its default, else
// defaultWorkers.
func (r *Reconciler[T]) concurrency(mgr manager.Manager) int {
	if r.maxConc > 0 {
		return r.maxConc
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

// Reconcile brings one T to its desired state; see Reconciler for the steps.
func (r *Reconciler[T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.initErr != nil {
		return ctrl.Result{}, r.initErr
	}
	ctx, ask := withRequeue(ctx)
	res, err := r.reconcile(ctx, req)
	if err != nil {
		return ask.onFailure(ctx, err)
	}
	return ask.earliest(res), nil
}

// reconcile is Reconcile's steps.
func (r *Reconciler[T]) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := loggerOf(ctx)
	judging := r.wake.judge(req.NamespacedName)
	defer judging.end()

	obj, err := r.get(ctx, req)
	if err != nil || isZero(obj) {
		return ctrl.Result{}, err
	}
	obj, release, err := admit(ctx, r.gate, obj, func() (T, error) { return r.get(ctx, req) })
	if err != nil {
		return notEntered(err)
	}
	if release == nil {
		return ctrl.Result{}, nil // gone during the wait
	}
	defer release()
	if r.shard != nil {
		end, stop, res, err := r.shardStep(ctx, obj)
		defer end()
		if stop {
			return res, err
		}
	}
	if obj.GetDeletionTimestamp() != nil {
		return r.finalize(ctx, log, obj)
	}
	r.forgetDeletion(req.NamespacedName)
	if r.suspended(obj) {
		return r.suspend(ctx, log, obj)
	}
	rv := obj.GetResourceVersion()
	if _, err := finalizer.Ensure(ctx, r.client, obj, r.finalizer, finalizer.WithAPIReader(r.apiReader)); err != nil {
		r.metrics.result(resultError)
		return ctrl.Result{}, err
	}
	r.wrote(rv, obj)
	before, err := snapshot(obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	out := r.converge(ctx, obj)
	if err := out.failure(); err != nil && r.failedFn != nil {
		r.failedFn(ctx, obj, err)
	}
	r.wake.remember(judging, out.graph, out.result)
	r.recordChildren(obj, out)
	changed := r.setConditions(obj, out)
	wrote, err := r.patchStatus(ctx, obj, before)
	if err != nil {
		r.metrics.result(resultError)
		return ctrl.Result{}, errors.Join(out.err, err)
	}
	// A transition is a condition change that reached the server: a stale cache can make the same
	// change look new twice, but the second time the Patcher finds nothing left to write.
	return r.finish(log, obj, out, changed && wrote)
}

// get reads T from the cache (or, while the cache has not caught up with our own last write to it,
// what that write returned); a missing object returns the zero T.
func (r *Reconciler[T]) get(ctx context.Context, req ctrl.Request) (T, error) {
	var zero T
	obj := r.newObj()
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.forgetDeletion(req.NamespacedName)
			return zero, nil
		}
		return zero, fmt.Errorf("get %s %s: %w", r.gvk.Kind, req.NamespacedName, err)
	}
	resolved, ok := r.applier.Latest(r.gvk.GroupKind(), obj).(T)
	if !ok {
		return obj, nil
	}
	return resolved, nil
}

// wrote records that a write of the Reconciler turned T's version rvBefore into obj.
func (r *Reconciler[T]) wrote(rvBefore string, obj T) {
	r.applier.RememberWrite(r.gvk.GroupKind(), rvBefore, obj)
}

// patchStatus writes the status difference between before and obj and records the write.
func (r *Reconciler[T]) patchStatus(ctx context.Context, obj, before T) (bool, error) {
	rv := obj.GetResourceVersion()
	wrote, err := r.patcher.Patch(ctx, obj, before)
	if wrote {
		r.wrote(rv, obj)
	}
	return wrote, err
}

// snapshot returns a deep copy of obj for the status comparison.
func snapshot[T Object](obj T) (T, error) {
	c, ok := obj.DeepCopyObject().(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("deep copy of %T returned %T: generate DeepCopyObject for the type", obj, obj.DeepCopyObject())
	}
	return c, nil
}

// loggerOf returns the logger in ctx, which controller-runtime gives the controller's name and the
// object's key, or controller-runtime's own when ctx has none. logf.FromContext returns the same
// logger through WithValues, even with no values to add; a logger that renders its values when
// given them (funcr's, testr's) rendered them again for every reconcile.
func loggerOf(ctx context.Context) logr.Logger {
	if l, err := logr.FromContext(ctx); err == nil {
		return l
	}
	return logf.Log
}

func isZero[T Object](obj T) bool {
	v := reflect.ValueOf(obj)
	return !v.IsValid() || v.IsNil()
}

// outcome is what converging one object produced.
type outcome struct {
	graph   *graph.Graph
	result  *graph.Result
	pruned  []client.Object
	invalid *InvalidSpecError
	err     error
}

// converge builds the graph, applies it, prunes once everything is ready, and runs the status hook.
func (r *Reconciler[T]) converge(ctx context.Context, obj T) outcome {
	var out outcome
	g, err := r.children(ctx, obj)
	if err != nil {
		return r.failed(out, fmt.Errorf("build children: %w", err))
	}
	if g == nil {
		g = graph.New()
	}
	out.graph = g
	if err := g.Validate(); err != nil {
		out.invalid = &InvalidSpecError{Reason: ReasonInvalidGraph, Err: err}
		return out
	}
	r.labelChildren(g)
	r.watchTypes(ctx, g)
	out.result, err = g.Apply(ctx, r.applier, obj)
	if err != nil {
		return r.failed(out, err)
	}
	RequeueAfter(ctx, jitter(out.result.ObserveAgain)) // external nodes send no watch events
	if out.result.Ready {
		if types := r.typesToPrune(obj, g); len(types) > 0 {
			if out.pruned, err = g.Prune(ctx, r.applier, obj, types...); err != nil {
				return r.failed(out, err)
			}
		}
		if _, recorded := obj.GetAnnotations()[graph.ExternalAnnotation]; recorded {
			pruned, err := g.PruneExternal(ctx, r.applier, obj)
			if len(pruned) > 0 {
				loggerOf(ctx).Info("pruned external objects", "objects", pruned)
			}
			if err != nil {
				return r.failed(out, err)
			}
		}
	}
	if r.statusFn != nil {
		if err := r.statusFn(ctx, obj, out.result); err != nil {
			return r.failed(out, fmt.Errorf("status hook: %w", err))
		}
	}
	return out
}

// failure returns what failed, or nil.
func (o outcome) failure() error {
	if o.invalid != nil {
		return o.invalid
	}
	return o.err
}

// failed records err in out as invalid spec (an InvalidSpecError, or controller-runtime's
// TerminalError: either stalls the object) or transient error.
func (r *Reconciler[T]) failed(out outcome, err error) outcome {
	var invalid *InvalidSpecError
	switch {
	case errors.As(err, &invalid):
		out.invalid = invalid
	case errors.Is(err, ctrlreconcile.TerminalError(nil)):
		out.invalid = &InvalidSpecError{Reason: ReasonTerminalError, Err: err}
	default:
		out.err = err
	}
	return out
}

// setConditions sets Ready / Reconciling / Stalled from the outcome and, under WithConditions, from
// the author's conditions too, and reports whether the conditions changed.
func (r *Reconciler[T]) setConditions(obj T, out outcome) bool {
	if r.summary != nil {
		return r.setSummarized(obj, out)
	}
	resumed := status.Remove(obj, ConditionSuspended)
	return r.setOutcome(obj, out) || resumed
}

// setSummarized is setConditions under WithConditions: Ready is set from the outcome, then derived
// again from the author's conditions (status.Summarize).
func (r *Reconciler[T]) setSummarized(obj T, out outcome) bool {
	before := slices.Clone(obj.GetConditions())
	status.Remove(obj, ConditionSuspended)
	r.setOutcome(obj, out)
	s := *r.summary
	if ready := status.Get(obj, status.Ready); ready != nil && ready.Status == metav1.ConditionTrue {
		s.Reason, s.Message = ready.Reason, ready.Message
	}
	status.Summarize(obj, s)
	// Ready was set twice: a status it held before and holds again keeps its transition time.
	conds := slices.Clone(obj.GetConditions())
	for i, c := range conds {
		if j := slices.IndexFunc(before, func(b metav1.Condition) bool { return b.Type == c.Type }); j >= 0 && before[j].Status == c.Status {
			conds[i].LastTransitionTime = before[j].LastTransitionTime
		}
	}
	obj.SetConditions(conds)
	return !reflect.DeepEqual(before, conds)
}

// failureReason is the condition reason of a reconcile that failed with err: ReasonNotOwned when a
// child is not the object's to take, the failed node's step when err is a graph.NodeError, else
// ReasonReconcileError.
func failureReason(err error) string {
	var (
		orphan *apply.OrphanError
		owned  *ownership.AlreadyOwnedError
	)
	if errors.As(err, &orphan) || errors.As(err, &owned) || errors.Is(err, graph.ErrNotOwned) {
		return ReasonNotOwned
	}
	switch ne := graph.FirstNodeError(err); {
	case ne == nil:
		return ReasonReconcileError
	case ne.Step == graph.StepObserve:
		return ReasonObserveFailed
	case ne.Step == graph.StepDelete:
		return ReasonDeleteFailed
	default:
		return ReasonApplyFailed
	}
}

// setOutcome sets Ready / Reconciling / Stalled from the outcome and reports whether they changed.
func (r *Reconciler[T]) setOutcome(obj T, out outcome) bool {
	switch {
	case out.invalid != nil:
		return status.MarkStalled(obj, out.invalid.reason(), out.invalid.Error())
	case out.err != nil && failureReason(out.err) == ReasonNotOwned: // needs someone to act
		return status.MarkStalled(obj, ReasonNotOwned, out.err.Error())
	case out.err != nil:
		return status.MarkReconciling(obj, failureReason(out.err), out.err.Error())
	case !out.result.Ready:
		reason := ReasonProgressing
		for _, c := range out.result.Children {
			if !c.Applied {
				reason = ReasonWaitingForDependencies
				break
			}
		}
		msg := strings.Join(out.result.Waiting, "; ")
		if msg == "" {
			msg = "waiting for children to become ready"
		}
		return status.MarkReconciling(obj, reason, msg)
	default:
		n := len(out.result.Children)
		msg := fmt.Sprintf("all %d children ready", n)
		if n == 1 {
			msg = "the child is ready"
		} else if n == 0 {
			msg = "reconciled, no children"
		}
		return status.MarkReady(obj, ReasonReconciled, msg)
	}
}

// finish emits the outcome's events and metrics and chooses the result.
func (r *Reconciler[T]) finish(log logr.Logger, obj T, out outcome, transition bool) (ctrl.Result, error) {
	switch {
	case out.invalid != nil:
		r.metrics.result(resultStalled)
		if transition {
			log.Info("invalid spec: stalled until the spec changes", "reason", out.invalid.reason(), "error", out.invalid.Error())
			r.warn(obj, nil, out.invalid.reason(), "Reconcile", out.invalid.Error())
		}
		// Terminal for controller-runtime: no retry, and its terminal-error metric counts it.
		return ctrl.Result{}, ctrlreconcile.TerminalError(out.invalid)
	case out.err != nil:
		r.metrics.result(resultError)
		if transition {
			r.warn(obj, nil, failureReason(out.err), "Reconcile", out.err.Error())
		}
		return ctrl.Result{}, out.err
	case !out.result.Ready:
		r.metrics.result(resultWaiting)
		log.V(1).Info("waiting for children", "waiting", out.result.Waiting)
		return ctrl.Result{RequeueAfter: r.nextLook()}, nil
	default:
		r.metrics.result(resultReady)
		if transition {
			log.Info("ready", "children", len(out.result.Children))
		}
		return ctrl.Result{RequeueAfter: r.nextLook()}, nil
	}
}

// finalize runs the deletion steps for an object being deleted: children in reverse order, the cleanup
// hook, then the finalizer. Each step runs only when the previous one is done.
func (r *Reconciler[T]) finalize(ctx context.Context, log logr.Logger, obj T) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(obj)
	if !finalizer.Has(obj, r.finalizer) {
		r.forgetDeletion(key)
		return ctrl.Result{}, nil
	}
	r.trackDeletion(key)
	before, err := snapshot(obj)
	if err != nil {
		return ctrl.Result{}, err
	}

	res, err := r.deleteChildren(ctx, log, obj)
	r.recordDeleted(obj, res.Deleted)
	if err != nil {
		r.metrics.deletionStep("children", "error")
		r.metrics.result(resultError)
		r.warn(obj, nil, EventReasonDeleteFailed, "Delete", err.Error())
		return r.deletionFails(ctx, log, obj, before, "delete children", err)
	}
	if !res.Done {
		r.metrics.deletionStep("children", "waiting")
		return r.deletionWaits(ctx, obj, before, "waiting for children to be deleted")
	}
	r.metrics.deletionStep("children", "done")

	var cleanup finalizer.Cleanup
	if r.cleanup != nil {
		cleanup = func(ctx context.Context) (bool, error) { return r.cleanup(ctx, obj) }
	}
	rv := obj.GetResourceVersion()
	done, err := finalizer.Finalize(ctx, r.client, obj, r.finalizer, cleanup, finalizer.WithAPIReader(r.apiReader))
	if done {
		// A reconcile that still reads the version from before the removal works on its answer
		// (no finalizer: nothing to do) instead of sending the removal again.
		r.applier.RememberFinalized(r.gvk.GroupKind(), rv, obj)
	}
	if err != nil {
		r.metrics.deletionStep("cleanup", "error")
		r.metrics.result(resultError)
		r.warn(obj, nil, EventReasonCleanupFailed, "Delete", err.Error())
		return r.deletionFails(ctx, log, obj, before, "cleanup", err)
	}
	if !done {
		r.metrics.deletionStep("cleanup", "waiting")
		return r.deletionWaits(ctx, obj, before, "waiting for cleanup")
	}
	r.metrics.deletionStep("finalizer", "done")
	r.metrics.result(resultFinalized)
	r.forgetDeletion(key)
	r.applier.ForgetChildren(obj.GetUID())
	// No event: the object is gone right after this; the ChildrenDeleted events (WithChangeEvents)
	// and the log tell the story.
	log.Info("finalized: children deleted, cleanup done, finalizer removed")
	return ctrl.Result{}, nil
}

// deletionWaits records in the status what the deletion waits for and looks again after the poll
// interval (watch events of children usually come sooner).
func (r *Reconciler[T]) deletionWaits(ctx context.Context, obj, before T, msg string) (ctrl.Result, error) {
	r.metrics.result(resultDeleting)
	status.MarkReconciling(obj, ReasonDeleting, msg)
	if _, err := r.patchStatus(ctx, obj, before); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err) // gone meanwhile: nothing left to do
	}
	return ctrl.Result{RequeueAfter: r.poll}, nil
}

// deletionFails records in the status that the deletion step failed with err (Ready=False, and
// Reconciling=True, or Stalled=True when err is terminal), so that a deletion held by a failure never
// reads as Ready, and returns err for the retry. A failed status patch is logged: the step's error is
// the one that matters.
func (r *Reconciler[T]) deletionFails(ctx context.Context, log logr.Logger, obj, before T, step string, err error) (ctrl.Result, error) {
	msg := fmt.Sprintf("%s: %v", step, err)
	if errors.Is(err, ctrlreconcile.TerminalError(nil)) {
		status.MarkStalled(obj, ReasonDeletionFailed, msg)
	} else {
		status.MarkReconciling(obj, ReasonDeletionFailed, msg)
	}
	if _, perr := r.patchStatus(ctx, obj, before); client.IgnoreNotFound(perr) != nil {
		log.Error(perr, "record the failed deletion step in the status")
	}
	return ctrl.Result{}, err
}

// deleteChildren deletes the graph in reverse order, then any other child of the known types (types
// the graph no longer declares). When the graph cannot be built from the spec, it deletes the
// children of the known types and the recorded external objects in the order their marks say
// (graph.DeleteByMarks). The result is never nil; its Deleted lists what this pass deleted, even on
// error.
func (r *Reconciler[T]) deleteChildren(ctx context.Context, log logr.Logger, obj T) (*graph.DeleteResult, error) {
	typesToDelete := r.knownTypes()
	g, err := r.children(ctx, obj)
	switch {
	case err != nil:
		log.Info("cannot build the children graph; deleting the children in the order their marks say", "error", err.Error())
	case g == nil:
	case g.Validate() != nil:
		log.Info("invalid children graph; deleting the children in the order their marks say", "error", g.Validate().Error())
	default:
		res, err := g.Delete(ctx, r.applier, obj)
		if res == nil {
			res = &graph.DeleteResult{}
		}
		if err != nil || !res.Done {
			return res, err
		}
		typesToDelete = r.mergeTypes(typesToDelete, g)
		// Every declared child is gone: a kind is listed only if the child counts say the cache may
		// still hold a child of it (a list scans every cached object of the kind: N^2 label checks
		// over the deletion of N owners).
		mayHold := func(gk schema.GroupKind) bool { return r.counts.mayHoldUndeclared(obj.GetUID(), gk, 0) }
		rest, err := r.applier.DeleteOwned(ctx, obj, apply.OwnedScope{MayHold: mayHold}, typesToDelete...)
		return ownedResult(res.Deleted, rest), err
	}
	return graph.DeleteByMarks(ctx, r.applier, obj, typesToDelete, r.extKinds...)
}

// ownedResult is the result of a deletion pass that deleted (in graph order) what deleted lists, then
// what DeleteOwned reported in rest.
func ownedResult(deleted []graph.ChildResult, rest *apply.OwnedDeletion) *graph.DeleteResult {
	res := &graph.DeleteResult{Done: rest.Done, Deleted: deleted, Waiting: rest.Waiting}
	for _, obj := range rest.Deleted {
		res.Deleted = append(res.Deleted, graph.ChildResult{Object: obj, Operation: apply.OperationDeleted})
	}
	return res
}

// declaredTypes returns the first declared child of each child kind of g, in declaration order, with
// its kind: the graph's own objects, to read their types, never their content.
func (r *Reconciler[T]) declaredTypes(g *graph.Graph) ([]client.Object, []schema.GroupVersionKind) {
	var objs []client.Object
	var kinds []schema.GroupVersionKind
	for _, n := range g.Nodes() {
		obj := n.Object()
		if isNilObject(obj) {
			continue
		}
		gvk, err := apiutil.GVKForObject(obj, r.scheme)
		if err != nil || slices.Contains(kinds, gvk) {
			continue
		}
		objs, kinds = append(objs, obj), append(kinds, gvk)
	}
	return objs, kinds
}

// watchTypes starts watching child types g declares that are not watched yet (only once the
// controller is set up; direct Reconcile calls skip this).
func (r *Reconciler[T]) watchTypes(ctx context.Context, g *graph.Graph) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.controller == nil {
		return
	}
	samples, kinds := r.declaredTypes(g)
	for i, sample := range samples {
		gvk := kinds[i]
		if _, ok := r.watched[gvk]; ok {
			continue
		}
		o := kobj.New(sample)
		if err := r.controller.Watch(source.Kind(r.cache, o, r.counts.handler(gvk.GroupKind(), r.handler))); err != nil {
			logf.FromContext(ctx).Error(err, "cannot watch child type; declare it with WithOwns", "kind", gvk.String())
			continue
		}
		logf.FromContext(ctx).Info("watching child type not declared with WithOwns", "kind", gvk.String())
		r.watched[gvk] = o
	}
}

// knownTypes returns the WithOwns types plus every type watched since.
func (r *Reconciler[T]) knownTypes() []client.Object {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]client.Object(nil), r.owns...)
	for gvk, o := range r.watched {
		if !r.hasType(gvk) {
			out = append(out, o)
		}
	}
	return out
}

func (r *Reconciler[T]) pruneTypes(g *graph.Graph) []client.Object {
	return r.mergeTypes(r.knownTypes(), g)
}

// typesToPrune returns the types of pruneTypes(g) whose cached objects tracked by owner may include
// one g does not declare: those the child counts say hold more objects than g declares of the kind,
// those not counted, and those with a declared child whose write the cache has not shown yet.
func (r *Reconciler[T]) typesToPrune(owner T, g *graph.Graph) []client.Object {
	all := r.pruneTypes(g)
	declared := map[schema.GroupKind]int{}
	unseen := map[schema.GroupKind]bool{}
	for _, n := range g.Nodes() {
		if n.Object() == nil {
			continue // an external node
		}
		gvk, err := apiutil.GVKForObject(n.Object(), r.scheme)
		if err != nil {
			return all // Prune reports it
		}
		gk := gvk.GroupKind()
		declared[gk]++
		if r.applier.Unseen(owner, n.Object()) {
			unseen[gk] = true
		}
	}
	var out []client.Object
	for _, t := range all {
		gvk, err := apiutil.GVKForObject(t, r.scheme)
		if err != nil || unseen[gvk.GroupKind()] || r.counts.mayHoldUndeclared(owner.GetUID(), gvk.GroupKind(), declared[gvk.GroupKind()]) {
			out = append(out, t)
		}
	}
	return out
}

// mergeTypes appends an empty object of each child type g declares that a does not hold yet. Once
// the controller watches them, a holds every declared type (knownTypes), and nothing is made: an
// empty object per declared type and reconcile (g.Types(), a Deployment's large struct among them)
// was 2% of a restarted manager's CPU.
func (r *Reconciler[T]) mergeTypes(a []client.Object, g *graph.Graph) []client.Object {
	seen := map[schema.GroupVersionKind]bool{}
	for _, o := range a {
		if gvk, err := apiutil.GVKForObject(o, r.scheme); err == nil {
			seen[gvk] = true
		}
	}
	samples, kinds := r.declaredTypes(g)
	for i, sample := range samples {
		gvk := kinds[i]
		if seen[gvk] {
			continue
		}
		seen[gvk] = true
		a = append(a, kobj.New(sample))
	}
	return a
}

func (r *Reconciler[T]) trackDeletion(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.finalizing[key] {
		r.finalizing[key] = true
		r.metrics.finalizing(len(r.finalizing))
	}
}

func (r *Reconciler[T]) forgetDeletion(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finalizing[key] {
		delete(r.finalizing, key)
		r.metrics.finalizing(len(r.finalizing))
	}
}
