package reconcile

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/convergo-dev/convergo/internal/kobj"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/internal/seam"
	"github.com/convergo-dev/convergo/reconcile/member"
)

// WithMemberClusters lets the graph place children in the member clusters of set (graph.Node.InCluster):
// they are applied through each member's client and read from its cache, their changes there wake
// their owner, pruning and ordered deletion reach every member in the set, and a member added while
// the manager runs is watched at once. A member that cannot be reached holds back only the objects
// with children there: their conditions name the member and the node (Reconciling=True, ApplyFailed
// or DeleteFailed), and a deletion waits for its children there until it is back.
func WithMemberClusters(set *member.Set) ReconcilerOption {
	return func(c *reconcilerConfig) { c.members = set }
}

// setupMembers gives the Applier the member clusters and watches the children in each, as it is added.
func (r *Reconciler[T]) setupMembers(ctx context.Context) {
	if r.members == nil {
		return
	}
	r.members.Watch(func(name string, c cluster.Cluster) {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, o := range r.owns {
			gvk, _ := apiutil.GVKForObject(o, r.scheme)
			src := source.Kind(c.GetCache(), kobj.New(o), r.triggers.noting(triggerChild, gvk.Kind, r.counts.handler(gvk.GroupKind(), r.handler)))
			if err := r.controller.Watch(unsynced{src}); err != nil {
				logf.FromContext(ctx).Error(err, "cannot watch children in member cluster", "member", name, "kind", gvk.String())
			}
		}
	})
}

// unsynced is a source the controller does not wait for at start: a member cluster that cannot be
// reached must not hold the controller (and every object of the hub) back. Its children are read
// only once its cache has synced (the Applier checks).
type unsynced struct {
	src source.TypedSource[ctrlreconcile.Request]
}

func (u unsynced) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) error {
	return u.src.Start(ctx, q)
}

func (u unsynced) String() string { return "member cluster " + fmt.Sprint(u.src) }

// unseenIn reports whether the Applier of the member cluster (or the owner's, for "") wrote obj, a child
// of owner, and its cache has not shown it yet; true for a member it does not know.
func (r *Reconciler[T]) unseenIn(cluster string, owner, obj client.Object) bool {
	a, err := r.applier.In(cluster)
	return err != nil || seam.Of(a).Unseen(owner, obj)
}

// appliers returns the Applier of the owner's cluster, then those of the member clusters it knows.
func (r *Reconciler[T]) appliers() []*apply.Applier {
	out := []*apply.Applier{r.applier}
	for _, name := range seam.Of(r.applier).MemberNames() {
		if a, err := r.applier.In(name); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// deleteOwned deletes owner's children of types in its own cluster and in every member cluster (see
// the Applier's DeleteOwned), and joins what each pass did. A member it cannot reach holds the
// deletion: its error names the member.
func (r *Reconciler[T]) deleteOwned(ctx context.Context, owner client.Object, scope seam.OwnedScope, types []client.Object) (*seam.OwnedDeletion, error) {
	res := &seam.OwnedDeletion{Done: true}
	var errs []error
	for _, name := range append([]string{""}, seam.Of(r.applier).MemberNames()...) {
		a, err := r.applier.In(name)
		var rest *seam.OwnedDeletion
		if err == nil {
			rest, err = seam.Of(a).DeleteOwned(ctx, owner, scope, types...)
			res.Deleted = append(res.Deleted, rest.Deleted...)
			res.Waiting = append(res.Waiting, rest.Waiting...)
			res.Done = res.Done && rest.Done
		}
		if err != nil {
			res.Done = false
			if name != "" {
				err = fmt.Errorf("member cluster %q: %w", name, err)
			}
			errs = append(errs, err)
		}
	}
	return res, errors.Join(errs...)
}
