//go:build integration

package reconcile_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestIntegrationInformersAtStart: with WithInformersAtStart, a replica that has not won leader
// election (another holds the Lease) lists and caches the children's kind with its cache, while its
// controller never reconciles; without it, such a replica lists nothing.
func TestIntegrationInformersAtStart(t *testing.T) {
	tests := []struct {
		name        string
		opts        []reconcile.ReconcilerOption
		wantWatches bool
	}{
		{name: "with the option: children cached before leadership", opts: []reconcile.ReconcilerOption{reconcile.WithInformersAtStart()}, wantWatches: true},
		{name: "without: nothing listed before leadership"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := harness.Default()
			c := setupWidgets(t, env)
			ns := env.Namespace(t)
			child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cached", Namespace: ns}}
			if err := c.Create(t.Context(), child); err != nil {
				t.Fatal(err)
			}
			leaseID := fmt.Sprintf("informers-at-start-%d", i)
			lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: leaseID, Namespace: ns}, Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To("another-replica"), LeaseDurationSeconds: ptr.To[int32](3600),
				AcquireTime: &metav1.MicroTime{Time: time.Now()}, RenewTime: &metav1.MicroTime{Time: time.Now()},
			}}
			if err := c.Create(t.Context(), lease); err != nil {
				t.Fatal(err)
			}
			counter := harness.NewRequestCounter()
			var calls atomic.Int64
			mgr := env.StartManager(t, func(mgr manager.Manager) error {
				r := reconcile.NewReconciler(mgr, reconcile.Hooks[*testapi.Widget]{Children: widgetChildren(&calls)},
					append([]reconcile.ReconcilerOption{reconcile.WithName(leaseID), reconcile.WithOwns(&corev1.ConfigMap{})}, tt.opts...)...)
				return r.SetupWithManager(mgr)
			}, harness.WithManagerConfig(counter.Wrap(env.Config)), harness.WithManagerOptions(func(o *manager.Options) {
				o.Scheme = widgetScheme
				o.NewCache = reconcile.NewCache
				o.LeaderElection = true
				o.LeaderElectionID = leaseID
				o.LeaderElectionNamespace = ns
				o.RetryPeriod = ptr.To(200 * time.Millisecond)
			}))
			listed := func() (widgets, configMaps bool) {
				for _, r := range counter.Snapshot() {
					if r.Verb != "list" && r.Verb != "watch" {
						continue
					}
					switch r.Resource {
					case "widgets":
						widgets = true
					case "configmaps":
						configMaps = true
					}
				}
				return widgets, configMaps
			}
			// The manager asks for the Lease only after its cache has started (with the informers
			// started early); five attempts leave their first requests time to be sent.
			harness.Eventually(t, time.Minute, func() (bool, string) {
				n := 0
				for _, r := range counter.Snapshot() {
					if r.Resource == "leases" && r.Verb == "get" {
						n++
					}
				}
				return n >= 5, fmt.Sprintf("%d attempts at the Lease", n)
			})
			if tt.wantWatches {
				harness.Eventually(t, time.Minute, func() (bool, string) {
					w, cm := listed()
					return w && cm, fmt.Sprintf("widgets listed: %v, configmaps listed: %v", w, cm)
				})
				var cms corev1.ConfigMapList
				if err := mgr.GetCache().List(t.Context(), &cms, client.InNamespace(ns)); err != nil {
					t.Fatal(err)
				}
				if len(cms.Items) != 1 || cms.Items[0].Name != child.Name {
					t.Errorf("cached ConfigMaps = %d, want the one child", len(cms.Items))
				}
			} else if w, cm := listed(); w || cm {
				t.Errorf("a replica without leadership listed widgets: %v, configmaps: %v; want neither", w, cm)
			}
			if n := calls.Load(); n != 0 {
				t.Errorf("the controller built %d graphs without leadership, want 0", n)
			}
			for _, r := range counter.Snapshot() {
				if r.IsWrite() && r.Resource != "leases" && r.Resource != "events" {
					t.Errorf("a replica without leadership wrote: %s %s", r.Verb, r.FullResource())
				}
			}
		})
	}
}
