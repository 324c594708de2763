package reconcile

import (
	"io"
	"maps"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SealedDigest is sealedDigest of manager's apply entry of obj, for the tests of reconcile_test.
func SealedDigest(obj client.Object, manager string) (string, bool) {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == manager && mf.Subresource == "" {
			digest, _, ok := sealedDigest(obj, mf)
			return digest, ok
		}
	}
	return "", false
}

// ValuesDigest is the digest of the values obj holds in the fields manager applied, read from the
// values themselves (obj without LabelAppliedIntent, label or annotation), for the tests of reconcile_test.
func ValuesDigest(obj client.Object, gvk schema.GroupVersionKind, manager string) string {
	unsealed := obj.DeepCopyObject().(client.Object)
	labels, anns := maps.Clone(unsealed.GetLabels()), maps.Clone(unsealed.GetAnnotations())
	delete(labels, LabelAppliedIntent)
	delete(anns, LabelAppliedIntent) // a Service's record
	unsealed.SetLabels(labels)
	unsealed.SetAnnotations(anns)
	return digestOf(unsealed, gvk, manager)
}

// NewEventDecoder is the watch.Decoder NewCache's informers of obj's kind in scheme decode a JSON
// watch's answer with (nil when they leave it to client-go's), for the tests of reconcile_test.
func NewEventDecoder(body io.ReadCloser, obj runtime.Object, scheme *runtime.Scheme, strip bool) watch.Decoder {
	kind := newWatchKind(obj, scheme)
	if kind == nil {
		return nil
	}
	return kind.newEventDecoder(body, strip)
}

// OwnDecodedWatches is how many watches of lw, the ListerWatcher NewCache gives its informers, had
// their answers decoded by NewCache's decoder, not client-go's; -1 for another ListerWatcher.
func OwnDecodedWatches(lw toolscache.ListerWatcher) int64 {
	m, ok := lw.(*markedListerWatcher)
	if !ok {
		return -1
	}
	return m.own.Load()
}
