package reconcile_test

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/convergo-dev/convergo/reconcile"
)

// SlimCache sets a transform per child kind: the informer stores a copy without lists and maps, with a
// digest of what each server-side apply field manager applied. Here the transform is run by hand on
// a ConfigMap as the API server would send it after the operator applied its page.
func ExampleSlimCache() {
	var opts cache.Options // ctrl.Options{...}.Cache
	reconcile.SlimCache(&opts, &corev1.ConfigMap{})

	page := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "page", Namespace: "web", ManagedFields: []metav1.ManagedFieldsEntry{{
			Manager: reconcile.DefaultFieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:index.html":{}}}`)},
		}}},
		Data: map[string]string{"index.html": "<p>Hello</p>"},
	}
	for _, entry := range opts.ByObject {
		if _, err := entry.Transform(page); err != nil {
			fmt.Println(err)
		}
	}
	manager, digest, _ := strings.Cut(page.Annotations[reconcile.AnnotationApplied], "=")
	fmt.Println("data:", len(page.Data), "managedFields:", len(page.ManagedFields))
	fmt.Println("digest of", manager+":", len(digest), "hex digits")
	// Output:
	// data: 0 managedFields: 0
	// digest of convergo: 32 hex digits
}
