package reconcile

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// WithInformersAtStart starts the informers of every kind the controller watches (T, WithOwns,
// WithWatches) with the manager's cache, when the manager starts, instead of when the controller
// starts. By default controller-runtime starts a controller's watches only once the manager's cache
// has synced the informers created during setup (a field index's) and once leader election is won;
// a restart then lists the owners, and only after them the children. With this option they all list
// at once (a restart of the Welcome operator with 1,000 Welcomes waited 165 ms for its owners before
// its children's informers began). The manager's start does not wait for them: the controller's
// sources do, within the controller's CacheSyncTimeout, so a kind the manager may not list still
// fails the controller with an error. It takes effect when the manager's cache is reconcile.NewCache's
// and the Reconciler is set up before the manager starts; otherwise it changes nothing.
//
// The price: a replica that waits for leader election caches every watched kind too (a warm standby,
// which also takes over sooner). Use it without leader election, with sharding (every replica is
// active), or where a warm standby is worth its memory:
//
//	opts := []reconcile.ReconcilerOption{reconcile.WithOwns(&appsv1.Deployment{})}
//	if !leaderElect {
//		opts = append(opts, reconcile.WithInformersAtStart())
//	}
func WithInformersAtStart() ReconcilerOption {
	return func(c *reconcilerConfig) { c.informersAtStart = true }
}

// startInformers starts the informers the controller's sources will use with the manager's cache
// (promptCache.startEarly).
func (r *Reconciler[T]) startInformers(ctx context.Context) error {
	objs := append([]client.Object{r.newObj()}, r.owns...)
	for _, w := range r.watches {
		obj := w.obj
		if slices.Contains(w.opts, builder.WatchesOption(builder.OnlyMetadata)) {
			gvk, err := apiutil.GVKForObject(obj, r.scheme)
			if err != nil {
				return fmt.Errorf("watch %T: %w", obj, err)
			}
			meta := &metav1.PartialObjectMetadata{}
			meta.SetGroupVersionKind(gvk)
			obj = meta
		}
		objs = append(objs, obj)
	}
	for _, obj := range objs {
		if _, err := r.cache.startEarly(ctx, obj); err != nil {
			return fmt.Errorf("start the informer of %T with the cache: %w", obj, err)
		}
	}
	return nil
}
