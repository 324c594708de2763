// Package controller is the Welcome operator's reconciler, built on Convergo. A Welcome is a graph of
// three children: the page (a ConfigMap), the Deployment of web servers that mounts it, and the Service
// in front of them. The reconciler applies the page and the Service together, the Deployment once the
// page exists, reports the Welcome Ready once the Deployment is Available, and deletes in reverse.
//
// The password never passes through the operator: spec.passwordSecretRef names a Secret key the pods
// read. The operator only checks that the Secret exists (metadata only: Secret data is never cached);
// a missing one stalls the Welcome (SecretNotFound) until a watch on Secrets sees it appear.
package controller

import (
	"context"
	"fmt"
	"net"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/finalizer"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/childcache"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/sharding"
)

const (
	// Name is the controller's name: field manager, event source, metrics label, children's managed-by.
	Name = "welcome-operator"
	// Finalizer holds a Welcome until its children are gone, in reverse order.
	Finalizer = "web.convergo.dev/finalizer"
	// ReasonSecretNotFound is the Stalled (and Ready=False) reason while the password Secret is missing.
	ReasonSecretNotFound = "SecretNotFound"
)

// +kubebuilder:rbac:groups=web.convergo.dev,resources=welcomes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=web.convergo.dev,resources=welcomes/status,verbs=patch
// +kubebuilder:rbac:groups=web.convergo.dev,resources=welcomes/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// FinalizerPolicy returns config/admission's policy: the API server adds Finalizer to every new Welcome
// as it is created, sparing a patch per Welcome (finalizer.AdmissionPolicy); without it the controller adds it.
func FinalizerPolicy() (*admissionregistrationv1.MutatingAdmissionPolicy, error) {
	return finalizer.AdmissionPolicy(Finalizer, v1alpha1.GroupVersion.WithResource("welcomes").GroupResource())
}

// CacheOptions sets the manager's cache options (ctrl.Options.Cache): objects without managedFields,
// and of the child kinds, declared here only, just this operator's children. Use it unless another
// controller in the same manager needs every ConfigMap, Deployment or Service.
func CacheOptions(opts *cache.Options) {
	childcache.Configure(opts, &corev1.ConfigMap{}, &appsv1.Deployment{}, &corev1.Service{})
}

// ShardCacheOptions scopes the manager's caches to one replica's share of a sharded Welcome operator:
// the Welcomes and the child kinds labelled with its member (sharding.Config.ScopeCache). Call it
// after CacheOptions, and give the Reconciler the shard (Setup(reconcile.WithSharding(shard))).
func ShardCacheOptions(opts *cache.Options, cfg sharding.Config) {
	cfg.ScopeCache(opts, append([]client.Object{&v1alpha1.Welcome{}}, childcache.Kinds(*opts)...)...)
}

// SetupWithManager registers the Welcome controller with mgr: it is Setup().
func SetupWithManager(mgr ctrl.Manager) error { return Setup()(mgr) }

// Setup returns the function that registers the Welcome controller with a manager, with opts (the
// main's sharding and deletion places) after its own. Besides the Welcomes and their children, it
// watches Secrets, metadata only, and wakes the Welcomes whose spec.passwordSecretRef names one.
func Setup(opts ...reconcile.ReconcilerOption) func(ctrl.Manager) error {
	return func(mgr ctrl.Manager) error {
		w := &welcomes{reader: mgr.GetClient()}
		var kinds cache.Options
		CacheOptions(&kinds)
		r := reconcile.NewReconciler(mgr, reconcile.Hooks[*v1alpha1.Welcome]{Children: w.children, Status: status},
			append([]reconcile.ReconcilerOption{
				reconcile.WithName(Name),
				reconcile.WithFinalizer(Finalizer), // the admission policy's (FinalizerPolicy)
				reconcile.WithOwns(childcache.Kinds(kinds)...),
				reconcile.WithReferences(&corev1.Secret{}, func(w *v1alpha1.Welcome) []string {
					if ref := w.Spec.PasswordSecretRef; ref != nil {
						return []string{ref.Name}
					}
					return nil
				}),
			}, opts...)...,
		)
		return r.SetupWithManager(mgr) // its errors name the controller
	}
}

// welcomes holds what the Welcome controller's functions share: the manager's cached reader.
type welcomes struct {
	reader client.Reader
}

// children looks the password Secret up and builds the graph with Children. A missing Secret stalls
// the Welcome with reason SecretNotFound; the Secret watch brings it back when the Secret appears.
func (w *welcomes) children(ctx context.Context, obj *v1alpha1.Welcome) (*graph.Graph, error) {
	var password *metav1.PartialObjectMetadata
	if ref := obj.Spec.PasswordSecretRef; ref != nil {
		password = &metav1.PartialObjectMetadata{}
		password.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		err := w.reader.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: ref.Name}, password)
		switch {
		case apierrors.IsNotFound(err):
			return nil, &reconcile.InvalidSpecError{
				Reason: ReasonSecretNotFound,
				Err:    fmt.Errorf("secret %q named by spec.passwordSecretRef does not exist in namespace %q", ref.Name, obj.Namespace),
			}
		case err != nil:
			return nil, fmt.Errorf("get password secret %s/%s: %w", obj.Namespace, ref.Name, err)
		}
	}
	return Children(obj, password)
}

// status fills status.readyReplicas from the Deployment and the URLs from the Service.
func status(_ context.Context, obj *v1alpha1.Welcome, res *graph.Result) error {
	st := &obj.Status
	st.ReadyReplicas, st.ServiceURL, st.NodePort, st.NodePortURL = 0, "", 0, ""
	if d, ok := graph.Live[*appsv1.Deployment](res, "deployment"); ok {
		st.ReadyReplicas = d.Status.ReadyReplicas
	}
	svc, ok := graph.Live[*corev1.Service](res, "service")
	for i := 0; ok && i < len(svc.Spec.Ports); i++ {
		if p := svc.Spec.Ports[i]; p.Name == "http" {
			st.ServiceURL = "http://" + net.JoinHostPort(svc.Name+"."+svc.Namespace+".svc", strconv.Itoa(int(p.Port))) + "/hello/"
			if svc.Spec.Type == corev1.ServiceTypeNodePort && p.NodePort != 0 {
				st.NodePort, st.NodePortURL = p.NodePort, "http://<node-ip>:"+strconv.Itoa(int(p.NodePort))+"/hello/"
			}
		}
	}
	return nil
}
