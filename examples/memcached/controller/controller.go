// Package controller is the Memcached operator's reconciler, built on Convergo: Children says what a
// Memcached is made of (a Deployment of memcached pods, then a Service in front of it), a Status hook
// fills status.readyReplicas and status.nodes, and SetupWithManager hands both to
// reconcile.NewReconciler. Applying only on drift, ordering, pruning, conditions, events, status
// patches and ordered deletion (the Service before the Deployment) come from the library.
package controller

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/childcache"
	"github.com/convergo-dev/convergo/reconcile/graph"
)

// Name is the controller's name: its server-side apply field manager, the source of its events, the
// controller label of its metrics and the managed-by label of its children.
const Name = "memcached-operator"

// +kubebuilder:rbac:groups=cache.convergo.dev,resources=memcacheds,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=cache.convergo.dev,resources=memcacheds/status,verbs=patch
// +kubebuilder:rbac:groups=cache.convergo.dev,resources=memcacheds/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// CacheOptions shapes the manager's cache: no managedFields, and of the child kinds (declared here
// only) just this operator's children. Skip it if another controller needs every Deployment or Service.
func CacheOptions(opts *cache.Options) {
	childcache.Configure(opts, &appsv1.Deployment{}, &corev1.Service{})
}

// SetupWithManager registers the Memcached controller with mgr (finalizer cache.convergo.dev/finalizer).
func SetupWithManager(mgr ctrl.Manager) error {
	var kinds cache.Options
	CacheOptions(&kinds)
	r := reconcile.NewReconciler(mgr, reconcile.Hooks[*v1alpha1.Memcached]{Children: Children, Status: statusOf(mgr.GetClient())},
		reconcile.WithName(Name),
		reconcile.WithOwns(childcache.Kinds(kinds)...),
		// A scaling history in `kubectl describe memcached`: an event for every reconcile that changed
		// a child (by default only removals get one).
		reconcile.WithChangeEvents(),
	)
	return r.SetupWithManager(mgr) // its errors name the controller
}

// statusOf returns the Status hook: status.readyReplicas from the Deployment, status.nodes from the
// pods it selects, read from the manager's cache (reader).
func statusOf(reader client.Reader) func(context.Context, *v1alpha1.Memcached, *graph.Result) error {
	return func(ctx context.Context, mc *v1alpha1.Memcached, res *graph.Result) error {
		d, _ := graph.Live[*appsv1.Deployment](res, "deployment")
		var pods corev1.PodList
		if err := reader.List(ctx, &pods, client.InNamespace(mc.Namespace), client.MatchingLabels(Labels(mc).Selector())); err != nil {
			return fmt.Errorf("list pods of memcached %s/%s: %w", mc.Namespace, mc.Name, err)
		}
		mc.Status.ReadyReplicas, mc.Status.Nodes = ptr.Deref(d, appsv1.Deployment{}).Status.ReadyReplicas, nil
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				mc.Status.Nodes = append(mc.Status.Nodes, p.Name)
			}
		}
		slices.Sort(mc.Status.Nodes)
		return nil
	}
}
