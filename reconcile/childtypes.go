package reconcile

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/convergo-dev/convergo/internal/kobj"
	"github.com/convergo-dev/convergo/reconcile/graph"
)

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
		if err := r.controller.Watch(source.Kind(r.cache, o, r.triggers.noting(triggerChild, gvk.Kind, r.counts.handler(gvk.GroupKind(), r.handler)))); err != nil {
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
		if r.unseenIn(n.Cluster(), owner, n.Object()) {
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
