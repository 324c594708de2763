package reconcile

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/sharding"
)

// shardRetry is how soon a reconcile refused for want of a renewed Lease is tried again.
const shardRetry = time.Second

// WithSharding makes the Reconciler one active replica among several, each reconciling the objects
// its shard owns (see package sharding). It
//
//   - reconciles only the objects labelled with its member, and leaves alone a version it already
//     handed over that its cache still shows;
//   - hands an object over, between two reconciles, when the ring assigns it to another member;
//   - on the first reconcile of an object that moved here, relabels its children (read from the API
//     server, every WithOwns type and every child type watched so far) before anything reads them;
//   - labels every child with the member, so that children follow their owner into the next
//     member's cache (the label is left out of the intent hash: a move rewrites no child);
//   - sends every write through the shard's guard: nothing is written once the Lease was not
//     renewed within the renew deadline, and a graceful stop waits for the reconciles in flight.
//
// The manager's caches must be scoped with the shard's Config.ScopeCache, and the shard added to
// the manager (sharding.Join does both NewShard and mgr.Add).
//
//	shard, err := sharding.Join(mgr, cfg, &v1alpha1.Welcome{})
//	r := reconcile.NewReconciler(mgr, hooks, reconcile.WithSharding(shard), reconcile.WithOwns(children...))
func WithSharding(s *sharding.Shard) ReconcilerOption {
	return func(c *reconcilerConfig) { c.shard = s }
}

// shardStep admits one reconcile of obj on a sharded Reconciler. It stops the reconcile (stop) when
// obj is not this member's, when the member may not write, or when it handed obj over; it relabels
// the children of an object that moved here. end must be called when the reconcile is over.
func (r *Reconciler[T]) shardStep(ctx context.Context, obj T) (end func(), stop bool, res ctrl.Result, err error) {
	s := r.shard
	key, me := s.Label()
	if obj.GetLabels()[key] != me || s.Stale(obj) {
		return func() {}, true, ctrl.Result{}, nil // not ours, or a version we handed over
	}
	end, ok := s.Begin()
	if !ok {
		return end, true, ctrl.Result{RequeueAfter: shardRetry}, nil
	}
	moved, err := s.HandOver(ctx, obj)
	if err != nil || moved {
		return end, true, ctrl.Result{}, err
	}
	if obj.GetAnnotations()[sharding.AnnotationMovedFrom] == "" {
		return end, false, ctrl.Result{}, nil
	}
	rv := obj.GetResourceVersion()
	if _, err := s.TakeChildren(ctx, obj, ownership.LabelOwnerUID, r.childKinds()); err != nil {
		return end, true, ctrl.Result{}, fmt.Errorf("take over the children of %s: %w", obj.GetName(), err)
	}
	anns := obj.GetAnnotations()
	delete(anns, sharding.AnnotationMovedFrom)
	obj.SetAnnotations(anns)
	r.wrote(rv, obj)
	return end, false, ctrl.Result{}, nil
}

// childKinds returns the kinds of every WithOwns type and every child type watched so far.
func (r *Reconciler[T]) childKinds() []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, o := range r.knownTypes() {
		if gvk, err := apiutil.GVKForObject(o, r.scheme); err == nil {
			out = append(out, gvk)
		}
	}
	return out
}

// labelChildren gives every child of g the shard label of this member.
func (r *Reconciler[T]) labelChildren(g *Graph) {
	if r.shard == nil {
		return
	}
	key, me := r.shard.Label()
	for _, n := range g.nodes {
		l := n.obj.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l[key] = me
		n.obj.SetLabels(l)
	}
}

// isShardLabel tells the labels left out of the intent hash: a shard label changes when its owner
// moves, and the move relabels the children itself.
func isShardLabel(key string) bool { return strings.HasPrefix(key, sharding.LabelPrefix) }
