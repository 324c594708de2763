package reconcile

import (
	"slices"
	"time"

	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/reconcile/member"
	"github.com/convergo-dev/convergo/sharding"
	"github.com/convergo-dev/convergo/status"
)

// ReconcilerOption configures NewReconciler. (The package's apply.Option type configures the Applier;
// pass those through WithApplierOptions.)
type ReconcilerOption func(*reconcilerConfig)

type reconcilerConfig struct {
	name         string
	finalizer    string
	owns         []client.Object
	applierOpts  []apply.Option
	recorder     events.EventRecorder
	changeEvents bool
	pollInterval time.Duration
	watches      []extraWatch
	references   []reference
	shard        *sharding.Shard
	members      *member.Set
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
	// tracerProvider is WithTracerProvider's.
	tracerProvider trace.TracerProvider
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

// WithWatches adds a watch on objects that are not children: handler maps an event to the requests of
// the objects to reconcile, opts are passed to the controller builder (e.g. builder.OnlyMetadata to
// keep Secret data out of the cache). It may be given several times. For objects the spec names by
// name, such as a Secret, WithReferences does the mapping.
//
//	reconcile.WithWatches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(clustersOnNode))
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
// across restarts. With childcache, declare them once, in the cache options, and pass
// childcache.Kinds(opts.Cache)... here.
func WithOwns(objs ...client.Object) ReconcilerOption {
	return func(c *reconcilerConfig) { c.owns = append(c.owns, objs...) }
}

// WithExternalKinds declares the kinds of external objects the Children hook's graphs declare, so
// that an object whose graph cannot be built while it is deleted (an invalid spec, a referenced
// Secret gone) still has its external objects deleted, in order (see graph.Graph.DeleteByMarks). Without
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
// SkipNameValidation, LogConstructor, RateLimiter...), after the Reconciler set its own
// (MaxConcurrentReconciles), which f may change too. It may be given several times.
//
// MaxConcurrentReconciles is how many objects are reconciled at once (one object is never reconciled
// twice at the same time). Default: the manager's Controller.MaxConcurrentReconciles
// (ctrl.Options.Controller) or GroupKindConcurrency when set, else 4 (controller-runtime's own default
// is 1, which no operator written by hand keeps). Raising it is safe: children are written with
// server-side apply, and a reconcile that starts before the cache shows the Reconciler's own last
// write to the object works on what that write returned, so it does not repeat the write or conflict.
//
//	reconcile.WithControllerOptions(func(o *controller.Options) { o.ReconciliationTimeout = time.Minute })
//
// The RateLimiter decides how long an object waits before it is reconciled again after an error or
// a requeue; controller-runtime's default is, per object, an exponential backoff from 5 ms doubling
// up to 1000 s, reset when a reconcile succeeds, and overall a token bucket of 10 per second with
// bursts of 100. An operator whose reconciles call slow external systems may want a longer first
// step:
//
//	reconcile.WithControllerOptions(func(o *controller.Options) {
//		o.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[ctrl.Request](time.Second, 5*time.Minute)
//	})
func WithControllerOptions(f func(*controller.Options)) ReconcilerOption {
	return func(c *reconcilerConfig) { c.controllerOpts = append(c.controllerOpts, f) }
}

// WithDeletionConcurrency gives the objects being deleted n places of their own: up to n of them are
// finalized at once, besides the objects reconciled at once otherwise (controller.Options.MaxConcurrentReconciles),
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

// withEventRecorder replaces the manager's event recorder (mgr.GetEventRecorder(name)): NewDirect's
// discards events.
func withEventRecorder(rec events.EventRecorder) ReconcilerOption {
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

// WithPollInterval sets how long a deletion waits before looking again when it waits for something
// that may not produce a watch event (children of unwatched types, the cleanup hook). Default 10s.
func WithPollInterval(d time.Duration) ReconcilerOption {
	return func(c *reconcilerConfig) { c.pollInterval = d }
}
