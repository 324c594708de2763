package reconcile

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/ownership"
)

// countingIndexer records IndexField calls and, like an informer, refuses a second index of a name.
type countingIndexer struct {
	calls   []string
	refuses bool // the informer has started: every registration fails
}

func (c *countingIndexer) IndexField(_ context.Context, obj client.Object, field string, _ client.IndexerFunc) error {
	if c.refuses {
		return errors.New("informer has already started")
	}
	for _, call := range c.calls {
		if call == field {
			return errors.New("indexer conflict")
		}
	}
	c.calls = append(c.calls, field)
	return nil
}

// TestIndexOwned: the index is registered once per cache and kind, however many Reconcilers own the
// kind; each records it; a cache that refuses it leaves the kind listed by label.
func TestIndexOwned(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	shared := &countingIndexer{}
	cases := map[string]struct {
		indexer   *countingIndexer
		wantErr   bool
		wantCalls []string
	}{
		"first Reconciler":  {indexer: shared, wantCalls: []string{ownerIndex}},
		"second Reconciler": {indexer: shared, wantCalls: []string{ownerIndex}},
		"started informer":  {indexer: &countingIndexer{refuses: true}, wantErr: true},
	}
	for _, name := range []string{"first Reconciler", "second Reconciler", "started informer"} {
		tc := cases[name]
		t.Run(name, func(t *testing.T) {
			kinds := &indexedKinds{}
			err := indexOwned(t.Context(), tc.indexer, &corev1.ConfigMap{}, gvk, kinds)
			if (err != nil) != tc.wantErr {
				t.Fatalf("indexOwned = %v, want error: %v", err, tc.wantErr)
			}
			if got := kinds.has(gvk.GroupKind()); got == tc.wantErr {
				t.Errorf("kind recorded as indexed: %v, want %v", got, !tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantCalls, tc.indexer.calls); diff != "" {
				t.Errorf("IndexField calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTrackedOwnerUID(t *testing.T) {
	cases := map[string]struct {
		labels map[string]string
		want   []string
	}{
		"tracked":     {labels: map[string]string{ownership.LabelOwnerUID: "uid-1"}, want: []string{"uid-1"}},
		"not tracked": {labels: map[string]string{"app": "web"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := trackedOwnerUID(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("index values (-want +got):\n%s", diff)
			}
		})
	}
}
