package bench

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
)

// receiverWorkers is the receiver's number of workers, the expert's and Convergo's.
const receiverWorkers = 4

// receiver is the least an operator of Welcomes does when it restarts: its manager lists and watches
// the Welcomes and the three kinds of their children in the namespace, without managedFields (as
// the expert's cache), and each of its
// reconciles reads its Welcome from the cache and nothing else: no child read, no request, no
// status. A child's event goes to the Welcome its controller reference names, read from the
// reference alone (controller-runtime's Owns asks its REST mapper for the owner's kind at every
// event: 13% of the receiver's CPU in a restart of 1000 Welcomes). Its restart measures what
// receiving the objects costs on this cluster, which every operator that lists them whole pays (the
// expert, Convergo), and so the shortest restart such an operator could have (Result.RestartFloor).
// An operator that asked for less (metadata only, say) would receive less. receiverFor gives it the
// client configuration of the implementation it measures.
var receiver = Implementation{
	Name:  "receiver",
	Setup: setUpReceiver,
	Cache: func(opts *cache.Options) {
		opts.DefaultTransform = cache.TransformStripManagedFields()
	},
}

// receiverFor returns the receiver that measures impl's restart floor: the receiver with impl's client
// configuration, so that it receives the objects as impl does (uncompressed, say).
func receiverFor(impl Implementation) Implementation {
	r := receiver
	r.Config = impl.Config
	return r
}

// setUpReceiver registers the receiver's controller with mgr.
func setUpReceiver(mgr manager.Manager) error {
	c := mgr.GetClient()
	err := ctrl.NewControllerManagedBy(mgr).
		Named("receiver").
		For(&v1alpha1.Welcome{}).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(toWelcome)).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(toWelcome)).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(toWelcome)).
		WithOptions(controller.Options{MaxConcurrentReconciles: receiverWorkers}).
		Complete(crreconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
			var w v1alpha1.Welcome
			return ctrl.Result{}, client.IgnoreNotFound(c.Get(ctx, req.NamespacedName, &w))
		}))
	if err != nil {
		return fmt.Errorf("set up the receiver: %w", err)
	}
	return nil
}

// toWelcome maps a child to its controller, when that is a Welcome.
func toWelcome(_ context.Context, child client.Object) []crreconcile.Request {
	ref := metav1.GetControllerOfNoCopy(child)
	if ref == nil || ref.Kind != welcomeKind.Kind || ref.APIVersion != welcomeKind.GroupVersion().String() {
		return nil
	}
	return []crreconcile.Request{{NamespacedName: types.NamespacedName{Namespace: child.GetNamespace(), Name: ref.Name}}}
}

// welcomeKind is the kind of the Welcomes.
var welcomeKind = v1alpha1.GroupVersion.WithKind("Welcome")
