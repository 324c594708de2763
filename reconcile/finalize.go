package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/attribute"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/convergo-dev/convergo/finalizer"
	"github.com/convergo-dev/convergo/internal/telemetry"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/reconcile/internal/seam"
	"github.com/convergo-dev/convergo/status"
)

// finalize runs the deletion steps for an object being deleted: children in reverse order, the cleanup
// hook, then the finalizer. Each step runs only when the previous one is done.
func (r *Reconciler[T]) finalize(ctx context.Context, log logr.Logger, obj T) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(obj)
	if !controllerutil.ContainsFinalizer(obj, r.finalizer) {
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
		r.result(ctx, resultError)
		r.warn(obj, nil, reasonDeleteFailed, "Delete", err.Error())
		return r.deletionFails(ctx, log, obj, before, "delete children", err)
	}
	if !res.Done {
		r.metrics.deletionStep("children", "waiting")
		return r.deletionWaits(ctx, obj, before, "waiting for children to be deleted")
	}
	r.metrics.deletionStep("children", "done")

	var cleanup func(context.Context) (bool, error)
	if r.cleanup != nil {
		cleanup = func(ctx context.Context) (bool, error) { return r.cleanup(ctx, obj) }
	}
	rv := obj.GetResourceVersion()
	fctx, sp := span(ctx, "cleanup and finalizer")
	done, err := finalizer.Finalize(fctx, r.client, obj, r.finalizer, cleanup, finalizer.WithAPIReader(r.apiReader))
	sp.SetAttributes(attribute.Bool("convergo.done", done))
	telemetry.EndSpan(sp, err)
	if done {
		// A reconcile that still reads the version from before the removal works on its answer
		// (no finalizer: nothing to do) instead of sending the removal again.
		seam.Of(r.applier).RememberFinalized(r.gvk.GroupKind(), rv, obj)
	}
	if err != nil {
		r.metrics.deletionStep("cleanup", "error")
		r.result(ctx, resultError)
		r.warn(obj, nil, reasonDeletionFailed, "Delete", err.Error())
		return r.deletionFails(ctx, log, obj, before, "cleanup", err)
	}
	if !done {
		r.metrics.deletionStep("cleanup", "waiting")
		return r.deletionWaits(ctx, obj, before, "waiting for cleanup")
	}
	r.metrics.deletionStep("finalizer", "done")
	r.result(ctx, resultFinalized)
	r.forgetDeletion(key)
	r.metrics.condition(key, "")
	if ts := obj.GetDeletionTimestamp(); ts != nil {
		r.metrics.deleted(time.Since(ts.Time))
	}
	for _, a := range r.appliers() {
		seam.Of(a).ForgetChildren(obj.GetUID())
	}
	// No event: the object is gone right after this; the ChildrenDeleted events (WithChangeEvents)
	// and the log tell the story.
	log.Info("finalized: children deleted, cleanup done, finalizer removed")
	return ctrl.Result{}, nil
}

// deletionWaits records in the status what the deletion waits for and looks again after the poll
// interval (watch events of children usually come sooner).
func (r *Reconciler[T]) deletionWaits(ctx context.Context, obj, before T, msg string) (ctrl.Result, error) {
	r.result(ctx, resultDeleting)
	status.MarkReconciling(obj, reasonDeleting, msg)
	r.countCondition(obj)
	if _, err := r.patchStatus(ctx, obj, before); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err) // gone meanwhile: nothing left to do
	}
	return later(ctx, r.poll, triggerPoll), nil
}

// deletionFails records in the status that the deletion step failed with err (Ready=False, and
// Reconciling=True, or Stalled=True when err is terminal), so that a deletion held by a failure never
// reads as Ready, and returns err for the retry. A failed status patch is logged: the step's error is
// the one that matters.
func (r *Reconciler[T]) deletionFails(ctx context.Context, log logr.Logger, obj, before T, step string, err error) (ctrl.Result, error) {
	msg := fmt.Sprintf("%s: %v", step, err)
	if errors.Is(err, ctrlreconcile.TerminalError(nil)) {
		status.MarkStalled(obj, reasonDeletionFailed, msg)
	} else {
		status.MarkReconciling(obj, reasonDeletionFailed, msg)
	}
	r.countCondition(obj)
	if _, perr := r.patchStatus(ctx, obj, before); client.IgnoreNotFound(perr) != nil {
		log.Error(perr, "record the failed deletion step in the status")
	}
	return ctrl.Result{}, err
}

// deleteChildren deletes the graph in reverse order, then any other child of the known types (types
// the graph no longer declares). When the graph cannot be built from the spec, it deletes the
// children of the known types and the recorded external objects in the order their marks say
// (Graph.DeleteByMarks). The result is never nil; its Deleted lists what this pass deleted, even on
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
		rest, err := r.deleteOwned(ctx, obj, seam.OwnedScope{MayHold: mayHold}, typesToDelete)
		return ownedResult(res.Deleted, rest), err
	}
	return graph.New(r.extKinds...).DeleteByMarks(ctx, r.applier, obj, typesToDelete...)
}

// ownedResult is the result of a deletion pass that deleted (in graph order) what deleted lists, then
// what DeleteOwned reported in rest.
func ownedResult(deleted []graph.ChildResult, rest *seam.OwnedDeletion) *graph.DeleteResult {
	res := &graph.DeleteResult{Done: rest.Done, Deleted: deleted, Waiting: rest.Waiting}
	for _, obj := range rest.Deleted {
		res.Deleted = append(res.Deleted, graph.ChildResult{Object: obj, Operation: apply.OperationDeleted})
	}
	return res
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
