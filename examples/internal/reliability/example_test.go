package reliability_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/convergo-dev/convergo/examples/internal/reliability"
	memcachedv1 "github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	"github.com/convergo-dev/convergo/ownership"
)

// Audit lists every broken guarantee: here a Memcached that was asked to be deleted but is still
// held, and a Service whose owner no longer exists. (The suites audit a real API server; a fake client
// keeps the example self-contained.)
func ExampleAudit() {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = memcachedv1.AddToScheme(scheme)
	now := metav1.Now()
	held := &memcachedv1.Memcached{ObjectMeta: metav1.ObjectMeta{
		Namespace: "demo", Name: "cache", UID: "uid-cache",
		DeletionTimestamp: &now, Finalizers: []string{reliability.Memcached.Finalizer},
	}}
	orphan := &corev1.Service{ObjectMeta: metav1.ObjectMeta{
		Namespace: "demo", Name: "old-cache",
		Labels:          map[string]string{ownership.OwnerUIDLabel: "uid-gone"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "cache.convergo.dev/v1alpha1", Kind: "Memcached", Name: "old", UID: "uid-gone"}},
	}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(held, orphan).Build()

	rep, err := reliability.Audit(context.Background(), c, reliability.Expectation{
		Operator: reliability.Memcached, Namespace: "demo", Deleted: []string{"cache"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(rep.OK())
	for _, p := range rep.Problems {
		fmt.Println(p[:min(len(p), 70)])
	}
	// Output:
	// false
	// memcached cache was asked to be deleted but still exists (deletionTime
	// orphaned Service old-cache: its owner Memcached old (uid uid-gone) doe
}
