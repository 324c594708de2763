package reconcile

import (
	"net/http"

	"github.com/convergo-dev/convergo/status"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// NewDirect returns a Reconciler that no manager runs: its Reconcile is called directly, as
// kubebuilder's and operator-sdk's controller tests call their reconciler's. It reads and writes
// through c (in such a test, envtest's client, which goes to the API server), asks apiReader where a
// cache could not be trusted (c again, then), and maps types with scheme. It watches nothing and sends
// no event. It is the migration path for those tests:
//
//	r := reconcile.NewDirect(k8sClient, k8sClient, k8sClient.Scheme(), controller.Hooks())
//	_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
//
// SetupWithManager must not be called on it; an operator uses NewReconciler.
func NewDirect[T status.Object](c client.Client, apiReader client.Reader, scheme *runtime.Scheme, hooks Hooks[T], opts ...ReconcilerOption) *Reconciler[T] {
	return NewReconciler(directManager{client: c, apiReader: apiReader, scheme: scheme}, hooks,
		append([]ReconcilerOption{withEventRecorder(discardEvents{})}, opts...)...)
}

// directManager is what NewReconciler reads of a manager, for NewDirect. Any other method panics (the
// embedded Manager is nil): a Reconciler made by NewDirect calls none.
type directManager struct {
	manager.Manager
	client    client.Client
	apiReader client.Reader
	scheme    *runtime.Scheme
}

func (m directManager) GetClient() client.Client                       { return m.client }
func (m directManager) GetAPIReader() client.Reader                    { return m.apiReader }
func (m directManager) GetScheme() *runtime.Scheme                     { return m.scheme }
func (m directManager) GetConfig() *rest.Config                        { return nil }
func (m directManager) GetHTTPClient() *http.Client                    { return nil }
func (m directManager) GetEventRecorder(string) recorder.EventRecorder { return nil }
func (m directManager) GetCache() cache.Cache                          { return nil }

// discardEvents is the event recorder of a Reconciler made by NewDirect: it records nothing.
type discardEvents struct{}

func (discardEvents) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {}
