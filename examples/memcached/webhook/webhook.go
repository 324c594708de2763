package webhook

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
)

// Memory overheads of a memcached process beside its cache: a base and a buffer per connection.
const (
	baseOverhead          = 32 << 20 // bytes
	perConnectionOverhead = 8 << 10  // bytes
)

// The path is the one controller-runtime's builder derives from the Memcached kind.
//
// +kubebuilder:webhook:path=/mutate-cache-convergo-dev-v1alpha1-memcached,mutating=true,failurePolicy=fail,sideEffects=None,groups=cache.convergo.dev,resources=memcacheds,verbs=create;update,versions=v1alpha1,name=mmemcached-v1alpha1.cache.convergo.dev,admissionReviewVersions=v1

// SetupWithManager registers the defaulting webhook with mgr's webhook server.
func SetupWithManager(mgr ctrl.Manager) error {
	if err := ctrl.NewWebhookManagedBy(mgr, &v1alpha1.Memcached{}).WithDefaulter(Defaulter{}).Complete(); err != nil {
		return fmt.Errorf("set up the memcached defaulting webhook: %w", err)
	}
	return nil
}

// Defaulter sets a Memcached's memory limit and request when they are missing (see the package
// documentation).
type Defaulter struct{}

// Default implements admission.Defaulter. The API server has applied the schema's defaults
// (cacheSizeMB, maxConnections) before it calls the webhook.
func (Defaulter) Default(_ context.Context, mc *v1alpha1.Memcached) error {
	spec := &mc.Spec
	if spec.Resources == nil {
		spec.Resources = &corev1.ResourceRequirements{}
	}
	res := spec.Resources
	if _, ok := res.Limits[corev1.ResourceMemory]; !ok {
		limit := Memory(*spec)
		if request, ok := res.Requests[corev1.ResourceMemory]; ok && request.Cmp(limit) > 0 {
			limit = request.DeepCopy()
		}
		if res.Limits == nil {
			res.Limits = corev1.ResourceList{}
		}
		res.Limits[corev1.ResourceMemory] = limit
	}
	if _, ok := res.Requests[corev1.ResourceMemory]; !ok {
		if res.Requests == nil {
			res.Requests = corev1.ResourceList{}
		}
		res.Requests[corev1.ResourceMemory] = res.Limits[corev1.ResourceMemory].DeepCopy()
	}
	return nil
}

// Memory returns the memory a memcached pod of spec needs: the cache, a base overhead and a buffer per
// connection, rounded up to whole mebibytes.
func Memory(spec v1alpha1.MemcachedSpec) resource.Quantity {
	bytes := int64(spec.CacheSizeMB)<<20 + baseOverhead + int64(spec.MaxConnections)*perConnectionOverhead
	mib := (bytes + 1<<20 - 1) >> 20
	return *resource.NewQuantity(mib<<20, resource.BinarySI)
}
