// Package controller is the tenancy operator's reconciler, built on Convergo. It runs in the hub:
// Children places, for each member cluster a Tenant names, the tenant's namespace there, its quota
// and its admins' access (graph nodes with InCluster), and a Status hook lists the members where all
// three hold the spec. Member clusters come from kubeconfig Secrets in the hub (member.FromSecrets);
// applying only on drift there, the order (the namespace first), never taking what another owner
// holds, pruning a member the spec drops, conditions that name the member of a failed step and ordered
// deletion behind the finalizer come from the library.
package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/convergo-dev/convergo/examples/tenancy/api/v1alpha1"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/childcache"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/reconcile/member"
)

// Name is the controller's name: its server-side apply field manager in every cluster, the source of
// its events and the controller label of its metrics.
const Name = "tenancy-operator"

// +kubebuilder:rbac:groups=tenancy.convergo.dev,resources=tenants,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=tenancy.convergo.dev,resources=tenants/status,verbs=patch
// +kubebuilder:rbac:groups=tenancy.convergo.dev,resources=tenants/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// CacheOptions shapes the hub manager's cache: of Secrets, only the member clusters' kubeconfigs.
func CacheOptions(opts *cache.Options) {
	member.CacheOptions(opts)
	childcache.Configure(opts, memberKinds()...)
}

// memberKinds are the kinds the operator places in member clusters.
func memberKinds() []client.Object {
	return []client.Object{&corev1.Namespace{}, &corev1.ResourceQuota{}, &rbacv1.RoleBinding{}}
}

// NewMember returns how a member cluster is made from its kubeconfig: scheme's types, a cache of only
// the operator's children, and requests that give up after timeout instead of holding a worker while
// the member is unreachable.
func NewMember(scheme *runtime.Scheme, timeout time.Duration) func(name string, cfg *rest.Config) (cluster.Cluster, error) {
	return func(_ string, cfg *rest.Config) (cluster.Cluster, error) {
		cfg = rest.CopyConfig(cfg)
		cfg.Timeout = timeout
		return cluster.New(cfg, func(o *cluster.Options) {
			o.Scheme = scheme
			childcache.Configure(&o.Cache, memberKinds()...)
		})
	}
}

// Setup returns the function that registers the Tenant controller with a manager, placing tenants in
// the member clusters of members (finalizer tenancy.convergo.dev/finalizer).
func Setup(members *member.Set) func(ctrl.Manager) error {
	return func(mgr ctrl.Manager) error {
		r := reconcile.NewReconciler(mgr, reconcile.Hooks[*v1alpha1.Tenant]{Children: Children, Status: fillStatus},
			reconcile.WithName(Name),
			reconcile.WithOwns(memberKinds()...),
			reconcile.WithMemberClusters(members),
		)
		return r.SetupWithManager(mgr)
	}
}

// fillStatus lists the members where every node the tenant has there is ready.
func fillStatus(_ context.Context, t *v1alpha1.Tenant, res *graph.Result) error {
	t.Status.Placed = nil
	for _, m := range t.Spec.Members {
		ready := true
		for _, c := range res.Children {
			if c.Name == "namespace-"+m || c.Name == "quota-"+m || c.Name == "admins-"+m {
				ready = ready && c.Ready
			}
		}
		if ready {
			t.Status.Placed = append(t.Status.Placed, m)
		}
	}
	return nil
}
