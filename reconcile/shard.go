package reconcile

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/sharding"
)

const (
	// shardRetry is how soon a reconcile refused for want of a renewed Lease is tried again.
	shardRetry = time.Second
	// takenWait bounds how long the first reconcile of an object that moved here waits for its
	// cache to show the children it relabelled (milliseconds, normally), and takenPoll is how often
	// it looks.
	takenWait = 5 * time.Second
	takenPoll = 5 * time.Millisecond
)

// WithSharding makes the Reconciler one active replica among several, each reconciling the objects
// its shard owns (see package sharding). It
//
//   - reconciles only the objects labelled with its member, and leaves alone a version it already
//     handed over that its cache still shows;
//   - hands an object over, between two reconciles, when the ring assigns it to another member;
//   - on the first reconcile of an object that moved here, relabels its children (read from the API
//     server, every WithOwns type and every child type watched so far) before anything reads them;
//   - labels every child with the member, so that children follow their owner into the next
//     member's cache (the new member relabels the children before its first apply, so a move
//     rewrites no child);
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
		return end, true, later(ctx, shardRetry, triggerShard), nil
	}
	moved, err := s.HandOver(ctx, obj)
	if err != nil || moved {
		return end, true, ctrl.Result{}, err
	}
	if obj.GetAnnotations()[sharding.MovedFromAnnotation] == "" {
		return end, false, ctrl.Result{}, nil
	}
	rv := obj.GetResourceVersion()
	taken, err := s.TakeChildren(ctx, obj, ownership.OwnerUIDLabel, r.childKinds())
	if err != nil {
		return end, true, ctrl.Result{}, fmt.Errorf("take over the children of %s: %w", obj.GetName(), err)
	}
	anns := obj.GetAnnotations()
	delete(anns, sharding.MovedFromAnnotation)
	obj.SetAnnotations(anns)
	r.wrote(rv, obj)
	r.awaitTaken(ctx, taken)
	return end, false, ctrl.Result{}, nil
}

// awaitTaken waits, at most takenWait in all, until the cache shows each child TakeChildren
// relabelled with this member's label. Until its watch event arrives, the shard's scoped cache does
// not show a child that moved here: the Applier would take it for missing and send a create that
// fails, then read it from the API server (two requests, and a conflict in the log, for a child that
// holds its intent). Past the bound the reconcile goes on, and the Applier's reads keep it right.
func (r *Reconciler[T]) awaitTaken(ctx context.Context, taken []client.Object) {
	if len(taken) == 0 {
		return
	}
	key, me := r.shard.Label()
	ctx, cancel := context.WithTimeout(ctx, takenWait)
	defer cancel()
	for _, child := range taken {
		proto, err := r.scheme.New(child.GetObjectKind().GroupVersionKind())
		cached, ok := proto.(client.Object)
		if err != nil || !ok {
			continue // a kind the cache does not hold typed: the Applier reads it from the API server
		}
		at := client.ObjectKeyFromObject(child)
		shown := func(ctx context.Context) (bool, error) {
			err := r.client.Get(ctx, at, cached)
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil && cached.GetLabels()[key] == me, err
		}
		if err := wait.PollUntilContextCancel(ctx, takenPoll, true, shown); err != nil {
			logf.FromContext(ctx).V(1).Info("cache does not show a child taken over yet; going on", "object", at, "error", err.Error())
			return
		}
	}
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

// labelChildren gives every child of g in the owner's cluster the shard label of this member. A child
// in a member cluster gets none: no scoped cache reads it (a member's cache holds every replica's
// children there), so a move changes nothing on it.
func (r *Reconciler[T]) labelChildren(g *graph.Graph) {
	if r.shard == nil {
		return
	}
	key, me := r.shard.Label()
	for _, n := range g.Nodes() {
		if n.Object() == nil || n.Cluster() != "" {
			continue // an external node, or a child in a member cluster
		}
		l := n.Object().GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l[key] = me
		n.Object().SetLabels(l)
	}
}
