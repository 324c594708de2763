package reconcile

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/ownership"
)

// ownerIndex is the cache index of children by the owner UID of their tracking label
// (ownership.LabelOwnerUID). The Reconciler registers it for its WithOwns kinds, so that Prune and
// DeleteOwned find an owner's children with one lookup instead of a scan of every cached object of the
// kind: with the scan, every reconcile of a converged owner took time in proportion to all the
// children in the cache, and a restart or a resync of N owners N times that.
const ownerIndex = "convergo.dev/tracked-owner-uid"

// indexedKinds are the kinds whose cache has ownerIndex; the zero value holds none.
type indexedKinds struct{ m sync.Map } // schema.GroupKind → struct{}

func (k *indexedKinds) has(gk schema.GroupKind) bool {
	if k == nil {
		return false
	}
	_, ok := k.m.Load(gk)
	return ok
}

// trackedOwnerUID is ownerIndex's function.
func trackedOwnerUID(obj client.Object) []string {
	if uid := obj.GetLabels()[ownership.LabelOwnerUID]; uid != "" {
		return []string{uid}
	}
	return nil
}

// indexKey is one kind of one cache.
type indexKey struct {
	indexer client.FieldIndexer
	gvk     schema.GroupVersionKind
}

// indexed holds the kinds of each cache that have ownerIndex: Reconcilers of one manager that own
// the same kind share one index (the informer refuses a second one of the same name).
var indexed sync.Map // indexKey → struct{}

// indexOwned gives obj's kind (gvk) ownerIndex in indexer, unless an earlier Reconciler did, and
// records it in kinds. It fails when the kind's informer has started without the index (a Reconciler
// set up after its manager started): its children are then found by their label.
func indexOwned(ctx context.Context, indexer client.FieldIndexer, obj client.Object, gvk schema.GroupVersionKind, kinds *indexedKinds) error {
	key := indexKey{indexer: indexer, gvk: gvk}
	if _, done := indexed.Load(key); !done {
		if err := indexer.IndexField(ctx, obj, ownerIndex, trackedOwnerUID); err != nil {
			return fmt.Errorf("index %s by tracked owner: %w", gvk.Kind, err)
		}
		indexed.Store(key, struct{}{})
	}
	kinds.m.Store(gvk.GroupKind(), struct{}{})
	return nil
}
