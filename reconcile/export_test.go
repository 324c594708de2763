package reconcile

import (
	"maps"

	"k8s.io/apimachinery/pkg/runtime/schema"
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
