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
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
		o.once.Do(func() { close(o.seen) })
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
// informers of the Reconciler's kind and of its children start with the manager, even when a field
// index makes the manager wait for the kind's informer before it starts the controllers: the
// children's list is sent while the Widgets' is still held. Staggered, the ConfigMaps would only be
// asked for once the Widgets had synced, and the held list would go on only after the bound. The
// Reconciler then works as ever: a Widget's child is created.
func TestIntegrationReconcilerInformersListTogether(t *testing.T) {
	env := harness.Default()
	c := setupWidgets(t, env)
	ns := env.Namespace(t)
	order := newListOrder("widgets", "configmaps")
	env.StartManager(t, func(mgr manager.Manager) error {
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), &testapi.Widget{}, "spec.data.key",
			func(obj client.Object) []string { return []string{obj.(*testapi.Widget).Spec.Data["key"]} }); err != nil {
			return err
		}
		var calls atomic.Int64
		rec := reconcile.NewReconciler(mgr, reconcile.Hooks[*testapi.Widget]{Children: widgetChildren(&calls)},
			reconcile.WithName("together"), reconcile.WithOwns(&corev1.ConfigMap{}))
		return rec.SetupWithManager(mgr)
	}, harness.WithManagerConfig(order.wrap(env.Config)), harness.WithManagerOptions(func(o *manager.Options) {
		o.Scheme = widgetScheme
		o.NewCache = reconcile.NewCache
	}))

	wt := &widgetTest{env: env, ns: ns, client: c}
	wt.create(t, "together", testapi.WidgetSpec{Data: map[string]string{"key": "v"}})
	harness.WaitForObject(t, c, client.ObjectKey{Namespace: ns, Name: "together-config"}, &corev1.ConfigMap{}, time.Minute,
		func(*corev1.ConfigMap) bool { return true })

	order.mu.Lock()
	released := append([]bool(nil), order.released...)
	order.mu.Unlock()
	if len(released) == 0 {
		t.Fatal("the manager sent no request for the Widgets' collection")
	}
	if diff := cmp.Diff(true, released[0]); diff != "" {
		t.Errorf("the Widgets' first list went on because the ConfigMaps' was sent meanwhile (-want +got):\n%s", diff)
	}
}
