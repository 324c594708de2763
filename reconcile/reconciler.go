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
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/convergo-dev/convergo/internal/marks"
	"github.com/convergo-dev/convergo/internal/telemetry"
	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/reconcile/internal/seam"
	"github.com/convergo-dev/convergo/reconcile/member"
	"github.com/convergo-dev/convergo/sharding"
	"github.com/convergo-dev/convergo/status"
)

// Condition reasons the Reconciler writes (see the package documentation, "Conditions").
const (
	// reasonReconciled: Ready=True, every child is applied and ready.
	reasonReconciled = "Reconciled"
	// reasonWaitingForDependencies: some child is held back until the children it depends on are ready.
	reasonWaitingForDependencies = "WaitingForDependencies"
	// reasonProgressing: every child is applied, some are not ready yet.
	reasonProgressing = "Progressing"
	// reasonReconcileError: a transient error no node's step names; the reconcile is retried with
	// backoff.
	reasonReconcileError = "ReconcileError"
	// reasonObserveFailed, reasonApplyFailed, reasonDeleteFailed: a node's step failed (a
	// graph.NodeError): Reconciling=True, the message naming the node and the error; retried with
	// backoff.
	reasonObserveFailed = "ObserveFailed"
	reasonApplyFailed   = "ApplyFailed"
	reasonDeleteFailed  = "DeleteFailed"
	// reasonInvalidSpec: the default reason of an *InvalidSpecError (Stalled=True, no retry).
	reasonInvalidSpec = "InvalidSpec"
	// reasonInvalidGraph: the children graph is invalid (Graph.Validate failed): Stalled=True.
	reasonInvalidGraph = "InvalidGraph"
	// reasonDeleting: the object is being deleted and waits for its children or its cleanup.
	reasonDeleting = "Deleting"
	// reasonDeletionFailed: a step of the deletion (deleting the children, the Cleanup hook) failed:
	// Reconciling=True (Stalled=True when the error is terminal), the message naming the step and the
	// error. The next pass that gets further replaces it.
	reasonDeletionFailed = "DeletionFailed"
	// reasonNotOwned: a child exists that is not this object's (another owner controls it, it existed
	// before, or KeepOnDelete released it), and it is never taken without opt-in: Stalled=True, the
	// message naming the child and what to do. Retried with backoff, since deleting that child by hand
	// sends this object no event.
	reasonNotOwned = "NotOwned"
	// reasonTerminalError: a hook returned controller-runtime's reconcile.TerminalError: Stalled=True,
	// not retried until the object changes.
	reasonTerminalError = "TerminalError"
)

// InvalidSpecError reports a spec that cannot be reconciled until it changes. The Reconciler turns it
// into Stalled=True (with Reason), a Warning event, and no requeue.
type InvalidSpecError struct {
	// Reason is the condition reason, CamelCase; empty means reasonInvalidSpec.
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
		return reasonInvalidSpec
	}
	return e.Reason
}

// Invalid returns an *InvalidSpecError with a formatted message (%w wraps as with fmt.Errorf).
func Invalid(format string, args ...any) error {
	return &InvalidSpecError{Err: fmt.Errorf(format, args...)}
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
// reconcile, "ChildrenApplied", when children were recreated or pruned (with
// WithChangeEvents also when they were only created or updated, and during deletion one Normal
// "ChildrenDeleted" per pass that deleted children, so the events show the teardown order;
// conditions, logs and the metric already tell those routine changes); Warning events when an invalid spec or a reconcile error first
// shows in the conditions (with the condition's reason) and when a deletion step fails
// (reasonDeleteFailed, reasonDeletionFailed). The metric convergo_child_operations_total
// counts every child operation.
type Reconciler[T status.Object] struct {
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
	references   []reference
	poll         time.Duration
	interval     time.Duration
	ctrlOpts     []func(*controller.Options)
	summary      *status.Summary
	extKinds     []graph.Option // WithExternalKinds'
	// deletionConc is WithDeletionConcurrency's number; gate, set up with the controller when it is
	// above 0, holds the places of both lanes.
	deletionConc int
	gate         *workerGate
	metrics      *reconcilerMetrics
	tracer       trace.Tracer // WithTracerProvider's, or the global provider's
	triggers     *triggers    // why each queued object is to be reconciled
	initErr      error
	// shard is set by WithSharding.
	shard *sharding.Shard
	// members are WithMemberClusters'.
	members *member.Set

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
type Hooks[T status.Object] struct {
	// Children builds the graph of obj's desired children from its spec. It is called on every
	// reconcile (and during deletion, to delete in reverse order) and must not modify obj. Return an
	// error made with Invalid (or controller-runtime's TerminalError) for a spec that can never work as
	// it is: the object becomes Stalled and is not retried until it changes. Any other error is retried
	// with backoff.
	Children func(ctx context.Context, obj T) (*graph.Graph, error)
	// Status fills status fields of obj from the apply result (e.g. readyReplicas from the live
	// Deployment, graph.Live[*appsv1.Deployment](res, "deployment")). It runs after every successful apply; the
	// Reconciler sets the conditions afterwards and writes the status only if it changed. An error made
	// with Invalid stalls the object; any other error is retried.
	Status func(ctx context.Context, obj T, res *graph.Result) error
	// Cleanup runs during deletion after every child is gone and before the finalizer is removed, for
	// what lives outside the cluster. It reports done=false while work remains; the object is then looked
	// at again after the poll interval. It must be idempotent.
	Cleanup func(ctx context.Context, obj T) (done bool, err error)
	// Suspended reports whether obj's reconciliation is suspended by its spec (e.g. spec.suspend), in
	// addition to suspendAnnotation, which always works. See suspendAnnotation for what suspension does.
	Suspended func(obj T) bool
	// Failed runs when a reconcile fails (a transient error, an invalid spec, a Status hook's error),
	// before the Reconciler sets its own conditions and writes the status: set your own conditions
	// there (Degraded=True, say), and they are written with the same patch. err is what failed.
	Failed func(ctx context.Context, obj T, err error)
}

// Reconcile brings one T to its desired state; see Reconciler for the steps.
func (r *Reconciler[T]) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	if r.initErr != nil {
		return ctrl.Result{}, r.initErr
	}
	began, tr := time.Now(), r.triggers.take(req.NamespacedName)
	ctx, span := r.startReconcile(ctx, req, tr)
	defer func() { r.endReconcile(ctx, span, tr, began, res, err) }()
	ctx, ask := withRequeue(ctx)
	res, err = r.reconcile(ctx, req)
	if err != nil {
		res, err = ask.onFailure(ctx, err)
	}
	why := ""
	if err == nil {
		res, why = ask.earliest(res)
	}
	switch {
	case err != nil && !errors.Is(err, ctrlreconcile.TerminalError(nil)):
		r.triggers.requeued(req.NamespacedName, triggerRetry)
	case why != "":
		r.triggers.requeued(req.NamespacedName, why)
	}
	return res, err
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
	trace.SpanFromContext(ctx).SetAttributes(attrGeneration.Int64(obj.GetGeneration()))
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
	if err := r.ensureFinalizer(ctx, obj); err != nil {
		r.result(ctx, resultError)
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
	r.recordChildren(ctx, obj, out)
	changed := r.setConditions(obj, out)
	r.countCondition(obj)
	wrote, err := r.patchStatus(ctx, obj, before)
	if err != nil {
		r.result(ctx, resultError)
		return ctrl.Result{}, errors.Join(out.err, err)
	}
	// A transition is a condition change that reached the server: a stale cache can make the same
	// change look new twice, but the second time the Patcher finds nothing left to write.
	return r.finish(ctx, log, obj, out, changed && wrote)
}

// get reads T from the cache (or, while the cache has not caught up with our own last write to it,
// what that write returned); a missing object returns the zero T.
func (r *Reconciler[T]) get(ctx context.Context, req ctrl.Request) (T, error) {
	var zero T
	obj := r.newObj()
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.forgetDeletion(req.NamespacedName)
			r.metrics.condition(req.NamespacedName, "")
			return zero, nil
		}
		return zero, fmt.Errorf("get %s %s: %w", r.gvk.Kind, req.NamespacedName, err)
	}
	resolved, ok := seam.Of(r.applier).Latest(r.gvk.GroupKind(), obj).(T)
	if !ok {
		return obj, nil
	}
	return resolved, nil
}

// wrote records that a write of the Reconciler turned T's version rvBefore into obj.
func (r *Reconciler[T]) wrote(rvBefore string, obj T) {
	seam.Of(r.applier).RememberWrite(r.gvk.GroupKind(), rvBefore, obj)
}

// patchStatus writes the status difference between before and obj and records the write.
func (r *Reconciler[T]) patchStatus(ctx context.Context, obj, before T) (bool, error) {
	ctx, sp := span(ctx, "status patch")
	rv := obj.GetResourceVersion()
	wrote, err := r.patcher.Patch(ctx, obj, before)
	if wrote {
		r.wrote(rv, obj)
	}
	sp.SetAttributes(attribute.Bool("convergo.written", wrote))
	telemetry.EndSpan(sp, err)
	return wrote, err
}

// snapshot returns a deep copy of obj for the status comparison.
func snapshot[T status.Object](obj T) (T, error) {
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

func isZero[T status.Object](obj T) bool {
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
		out.invalid = &InvalidSpecError{Reason: reasonInvalidGraph, Err: err}
		return out
	}
	r.labelChildren(g)
	r.watchTypes(ctx, g)
	out.result, err = g.Apply(ctx, r.applier, obj)
	if err != nil {
		return r.failed(out, err)
	}
	askAfter(ctx, jitter(out.result.ObserveAgain), triggerExternal) // external nodes send no watch events
	if out.result.Ready {
		if types := r.typesToPrune(obj, g); len(types) > 0 {
			if out.pruned, err = g.Prune(ctx, r.applier, obj, types...); err != nil {
				return r.failed(out, err)
			}
		}
		if _, recorded := obj.GetAnnotations()[marks.External]; recorded {
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
		out.invalid = &InvalidSpecError{Reason: reasonTerminalError, Err: err}
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
	resumed := status.Remove(obj, conditionSuspended)
	return r.setOutcome(obj, out) || resumed
}

// setSummarized is setConditions under WithConditions: Ready is set from the outcome, then derived
// again from the author's conditions (status.Summarize).
func (r *Reconciler[T]) setSummarized(obj T, out outcome) bool {
	before := slices.Clone(obj.GetConditions())
	status.Remove(obj, conditionSuspended)
	r.setOutcome(obj, out)
	s := *r.summary
	if ready := meta.FindStatusCondition(obj.GetConditions(), status.Ready); ready != nil && ready.Status == metav1.ConditionTrue {
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

// failureReason is the condition reason of a reconcile that failed with err: reasonNotOwned when a
// child is not the object's to take, the failed node's step when err is a graph.NodeError, else
// reasonReconcileError.
func failureReason(err error) string {
	var (
		orphan *apply.OrphanError
		owned  *ownership.AlreadyOwnedError
		ne     *graph.NodeError
	)
	if errors.As(err, &orphan) || errors.As(err, &owned) || errors.Is(err, graph.ErrNotOwned) {
		return reasonNotOwned
	}
	switch {
	case !errors.As(err, &ne):
		return reasonReconcileError
	case ne.Step == graph.StepObserve:
		return reasonObserveFailed
	case ne.Step == graph.StepDelete:
		return reasonDeleteFailed
	default:
		return reasonApplyFailed
	}
}

// setOutcome sets Ready / Reconciling / Stalled from the outcome and reports whether they changed.
func (r *Reconciler[T]) setOutcome(obj T, out outcome) bool {
	switch {
	case out.invalid != nil:
		return status.MarkStalled(obj, out.invalid.reason(), out.invalid.Error())
	case out.err != nil && failureReason(out.err) == reasonNotOwned: // needs someone to act
		return status.MarkStalled(obj, reasonNotOwned, out.err.Error())
	case out.err != nil:
		return status.MarkReconciling(obj, failureReason(out.err), out.err.Error())
	case !out.result.Ready:
		reason := reasonProgressing
		for _, c := range out.result.Children {
			if !c.Applied {
				reason = reasonWaitingForDependencies
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
		return status.MarkReady(obj, reasonReconciled, msg)
	}
}

// finish emits the outcome's events and metrics and chooses the result.
func (r *Reconciler[T]) finish(ctx context.Context, log logr.Logger, obj T, out outcome, transition bool) (ctrl.Result, error) {
	switch {
	case out.invalid != nil:
		r.result(ctx, resultStalled)
		if transition {
			log.Info("invalid spec: stalled until the spec changes", "reason", out.invalid.reason(), "error", out.invalid.Error())
			r.warn(obj, nil, out.invalid.reason(), "Reconcile", out.invalid.Error())
		}
		// Terminal for controller-runtime: no retry, and its terminal-error metric counts it.
		return ctrl.Result{}, ctrlreconcile.TerminalError(out.invalid)
	case out.err != nil:
		r.result(ctx, resultError)
		if transition {
			r.warn(obj, nil, failureReason(out.err), "Reconcile", out.err.Error())
		}
		return ctrl.Result{}, out.err
	case !out.result.Ready:
		r.result(ctx, resultWaiting)
		log.V(1).Info("waiting for children", "waiting", out.result.Waiting)
		return later(ctx, r.nextLook(), triggerInterval), nil
	default:
		r.result(ctx, resultReady)
		if transition {
			log.Info("ready", "children", len(out.result.Children))
		}
		return later(ctx, r.nextLook(), triggerInterval), nil
	}
}

// countCondition records in convergo_objects which of Ready, Reconciling and Stalled obj's conditions
// say is True.
func (r *Reconciler[T]) countCondition(obj T) {
	cond := "Unknown"
	for _, c := range []string{status.Stalled, status.Reconciling, status.Ready} {
		if meta.IsStatusConditionTrue(obj.GetConditions(), c) {
			cond = c
			break
		}
	}
	r.metrics.condition(client.ObjectKeyFromObject(obj), cond)
}
