package controller

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/childcache"
	"github.com/convergo-dev/convergo/reconcile/graph"
)

const (
	// Name is the controller's name: its server-side apply field manager, the source of its events,
	// the controller label of its metrics and the managed-by label of its children.
	Name = "memcached-operator"
	// Finalizer holds a Memcached until its children are gone, Service first.
	Finalizer = "cache.convergo.dev/finalizer"
)

// +kubebuilder:rbac:groups=cache.convergo.dev,resources=memcacheds,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=cache.convergo.dev,resources=memcacheds/status,verbs=patch
// +kubebuilder:rbac:groups=cache.convergo.dev,resources=memcacheds/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// CacheOptions sets the manager's cache options (ctrl.Options.Cache) for this controller: objects
// without managedFields, and of the child kinds (appsv1.Deployment, corev1.Service) only this
// operator's children (childcache.Configure). Use it unless another controller in the same manager
// needs every object of those kinds.
func CacheOptions(opts *cache.Options) {
	childcache.Configure(opts, &appsv1.Deployment{}, &corev1.Service{})
}

// SetupWithManager registers the Memcached controller with mgr: it is Setup().
func SetupWithManager(mgr ctrl.Manager) error {
	return Setup()(mgr)
}

// Setup returns the function that registers the Memcached controller with a manager, with opts
// applied after the controller's own reconciler options. Tests give it an observer of the reconciles
// (testing/optest.StartOperator does):
//
//	recs := optest.NewReconciles()
//	env.StartManager(t, controller.Setup(reconcile.WithReconcileObserver(recs.Observe)))
func Setup(opts ...reconcile.ReconcilerOption) func(ctrl.Manager) error {
	return func(mgr ctrl.Manager) error {
		s := &statusWriter{reader: mgr.GetClient()}
		r := reconcile.NewReconciler(mgr, reconcile.Hooks[*v1alpha1.Memcached]{Children: Children, Status: s.status},
			append([]reconcile.ReconcilerOption{
				reconcile.WithName(Name),
				reconcile.WithFinalizer(Finalizer),
				reconcile.WithOwns(&appsv1.Deployment{}, &corev1.Service{}),
				// A scaling history in `kubectl describe memcached`: an event for every reconcile that
				// changed a child (by default only removals get one).
				reconcile.WithChangeEvents(),
			}, opts...)...,
		)
		if err := r.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up memcached controller: %w", err)
		}
		return nil
	}
}

// statusWriter fills in the Memcached-specific status fields; the conditions come from the reconciler.
type statusWriter struct {
	reader client.Reader // the manager's cached client
}

// status sets status.readyReplicas from the Deployment and status.nodes from the pods it selects.
func (s *statusWriter) status(ctx context.Context, mc *v1alpha1.Memcached, res *graph.Result) error {
	mc.Status.ReadyReplicas = 0
	if child := res.Child("deployment"); child != nil {
		if d, ok := child.Object.(*appsv1.Deployment); ok {
			mc.Status.ReadyReplicas = d.Status.ReadyReplicas
		}
	}
	var pods corev1.PodList
	if err := s.reader.List(ctx, &pods, client.InNamespace(mc.Namespace), client.MatchingLabels(Labels(mc).Selector())); err != nil {
		return fmt.Errorf("list pods of memcached %s/%s: %w", mc.Namespace, mc.Name, err)
	}
	var nodes []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			nodes = append(nodes, p.Name)
		}
	}
	slices.Sort(nodes)
	mc.Status.Nodes = nodes
	return nil
}
