//go:build integration

package apply_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestIntegrationApplyNoSecondCreateWhileCacheLags: the manager's cache is held behind the API
// server (its watch events are withheld), so it does not show a child the Applier has just created.
// Applying the child again right away must not write it again when the Applier has the manager's API
// reader (one GET instead); without one, the second create is refused by the API server (it never
// overwrites an object the cache does not show) and the error names mgr.GetAPIReader(). Once the cache
// catches up, applying costs no request at all.
func TestIntegrationApplyNoSecondCreateWhileCacheLags(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	counter := harness.NewRequestCounter()
	gate := harness.NewWatchGate()
	mgr := env.StartManager(t, nil, harness.WithManagerConfig(gate.Wrap(counter.Wrap(env.Config))))
	t.Cleanup(gate.Resume) // before the manager stops (cleanups run last-registered first)

	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}}
	if err := env.Client.Create(t.Context(), owner); err != nil {
		t.Fatal(err)
	}
	// Start the ConfigMap informer and let it see the owner; then withhold its watch events.
	harness.Eventually(t, waitTimeout, func() (bool, string) {
		err := mgr.GetClient().Get(t.Context(), client.ObjectKeyFromObject(owner), &corev1.ConfigMap{})
		return err == nil, fmt.Sprintf("owner not in the cache: %v", err)
	})
	gate.Pause()

	type figures struct {
		Ops    []apply.Operation
		Writes int
		Gets   int
	}
	cases := map[string]struct {
		child     string
		apiReader client.Reader
		want      figures
	}{
		"with the API reader": {
			child:     "child-reader",
			apiReader: mgr.GetAPIReader(),
			want:      figures{Ops: []apply.Operation{apply.OperationCreated, apply.OperationUnchanged}, Writes: 1, Gets: 1},
		},
		// Given the cached client as its reader, the Applier cannot tell: the create is refused (the
		// child exists), nothing is overwritten, and the error says what to do.
		"the cached client as API reader": {
			child:     "child-plain",
			apiReader: mgr.GetClient(),
			want:      figures{Ops: []apply.Operation{apply.OperationCreated, "error: GetAPIReader"}, Writes: 2},
		},
	}
	appliers := map[string]*apply.Applier{}
	desired := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := apply.NewApplier(mgr.GetClient(), tc.apiReader)
			appliers[tc.child] = a
			counter.Reset()
			var got figures
			for range 2 {
				_, op, err := a.Apply(t.Context(), owner, desired(tc.child))
				if err != nil {
					op = "error: " + apply.Operation(err.Error())
					if strings.Contains(err.Error(), "mgr.GetAPIReader()") {
						op = "error: GetAPIReader"
					}
				}
				got.Ops = append(got.Ops, op)
			}
			reqs := counter.Snapshot().InNamespace(ns)
			got.Writes, got.Gets = reqs.Writes(), reqs.Count("get", "configmaps")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("two applies while the cache lags (-want +got):\n%s\nrequests:\n%s", diff, reqs)
			}
			// The lag is real: the cache still does not show the child.
			err := mgr.GetClient().Get(t.Context(), client.ObjectKey{Namespace: ns, Name: tc.child}, &corev1.ConfigMap{})
			if !apierrors.IsNotFound(err) {
				t.Errorf("cache read of %s while paused = %v, want NotFound", tc.child, err)
			}
		})
	}

	// The cache catches up: applying again is Unchanged and costs no request.
	gate.Resume()
	for child := range appliers {
		harness.Eventually(t, waitTimeout, func() (bool, string) {
			err := mgr.GetClient().Get(t.Context(), client.ObjectKey{Namespace: ns, Name: child}, &corev1.ConfigMap{})
			return err == nil, fmt.Sprintf("%s not in the cache: %v", child, err)
		})
	}
	counter.Reset()
	for child, a := range appliers {
		if _, op, err := a.Apply(t.Context(), owner, desired(child)); err != nil || op != apply.OperationUnchanged {
			t.Errorf("apply %s once the cache caught up = %s, %v; want Unchanged", child, op, err)
		}
	}
	if reqs := counter.Snapshot().InNamespace(ns); len(reqs) != 0 {
		t.Errorf("applies of cached, unchanged children made %d requests, want 0:\n%s", len(reqs), reqs)
	}
}
