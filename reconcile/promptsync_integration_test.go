//go:build integration

package reconcile_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/testing/harness"
)

// listOrder holds the manager's requests for the collection of one resource (its list and watch)
// until it has sent one for another resource, or until a bound: whether the first was released by the
// second says whether the two informers listed at the same time.
type listOrder struct {
	held, awaited string // plural resource names, e.g. "widgets", "configmaps"

	once sync.Once
	seen chan struct{} // closed once a request for awaited was sent
	// accept is the Accept header of the first request for awaited (under mu).
	accept string

	mu sync.Mutex
	// released: true once a held request went on because awaited was asked for, false if one went on
	// after the bound instead.
	released []bool
}

// listOrderBound is how long a held request waits for the awaited one: the Reconciler's informers
// start together, well within it; staggered, the awaited request never comes while one is held.
const listOrderBound = 30 * time.Second

func newListOrder(held, awaited string) *listOrder {
	return &listOrder{held: held, awaited: awaited, seen: make(chan struct{})}
}

func (o *listOrder) wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper { return listOrderTransport{next: rt, order: o} })
	return out
}

type listOrderTransport struct {
	next  http.RoundTripper
	order *listOrder
}

func (t listOrderTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	o := t.order
	switch {
	case strings.HasSuffix(req.URL.Path, "/"+o.awaited):
		o.once.Do(func() {
			o.mu.Lock()
			o.accept = req.Header.Get("Accept")
			o.mu.Unlock()
			close(o.seen)
		})
	case strings.HasSuffix(req.URL.Path, "/"+o.held):
		timer := time.NewTimer(listOrderBound)
		defer timer.Stop()
		released := false
		select {
		case <-o.seen:
			released = true
		case <-timer.C:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
		o.mu.Lock()
		o.released = append(o.released, released)
		o.mu.Unlock()
	}
	return t.next.RoundTrip(req)
}

// TestIntegrationReconcilerInformersListTogether: with the manager's cache built by NewCache, the
// informers of the Reconciler's kind, of its children and of its other watches start with the
// manager, even when a field index makes the manager wait for the kind's informer before it starts the
// controllers: the other kind's list is sent while the Widgets' is still held. Staggered, it would
// only be asked for once the Widgets had synced, and the held list would go on only after the bound.
// A metadata-only watch's informer is the metadata one (no Secret data cached). The Reconciler then
// works as ever: a Widget's child is created.
func TestIntegrationReconcilerInformersListTogether(t *testing.T) {
	tests := []struct {
		name    string
		awaited string
		opt     reconcile.ReconcilerOption
		// wantAccept is in the Accept header of the awaited kind's first request.
		wantAccept string
	}{
		{name: "children", awaited: "configmaps", opt: reconcile.WithOwns(&corev1.ConfigMap{}), wantAccept: "application/"},
		{
			name: "a metadata-only watch", awaited: "secrets",
			opt:        reconcile.WithWatches(&corev1.Secret{}, &handler.EnqueueRequestForObject{}, builder.OnlyMetadata),
			wantAccept: "as=PartialObjectMetadata",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := harness.Default()
			c := setupWidgets(t, env)
			ns := env.Namespace(t)
			order := newListOrder("widgets", tt.awaited)
			env.StartManager(t, func(mgr manager.Manager) error {
				if err := mgr.GetFieldIndexer().IndexField(context.Background(), &testapi.Widget{}, "spec.data.key",
					func(obj client.Object) []string { return []string{obj.(*testapi.Widget).Spec.Data["key"]} }); err != nil {
					return err
				}
				var calls atomic.Int64
				rec := reconcile.NewReconciler(mgr, reconcile.Hooks[*testapi.Widget]{Children: widgetChildren(&calls)},
					reconcile.WithName("together"), reconcile.WithOwns(&corev1.ConfigMap{}), tt.opt)
				return rec.SetupWithManager(mgr)
			}, harness.WithManagerConfig(order.wrap(env.Config)), harness.WithManagerOptions(func(o *manager.Options) {
				o.Scheme = widgetScheme
				o.NewCache = reconcile.NewCache
			}))

			// Deleted while the manager runs: later tests' managers watch every namespace.
			createGone(t, c, &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "together", Namespace: ns}, Spec: testapi.WidgetSpec{Data: map[string]string{"key": "v"}}})
			harness.WaitForObject(t, c, client.ObjectKey{Namespace: ns, Name: "together-config"}, &corev1.ConfigMap{}, time.Minute,
				func(*corev1.ConfigMap) bool { return true })

			order.mu.Lock()
			released, accept := append([]bool(nil), order.released...), order.accept
			order.mu.Unlock()
			if len(released) == 0 {
				t.Fatal("the manager sent no request for the Widgets' collection")
			}
			if diff := cmp.Diff(true, released[0]); diff != "" {
				t.Errorf("the Widgets' first list went on because the %s' was sent meanwhile (-want +got):\n%s", tt.awaited, diff)
			}
			if !strings.Contains(accept, tt.wantAccept) {
				t.Errorf("the first request for %s accepts %q, want it to name %q", tt.awaited, accept, tt.wantAccept)
			}
		})
	}
}
