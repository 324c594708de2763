package webhook_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/memcached/webhook"
)

// The webhook sizes the memory of a Memcached that names none from its cache and connections.
func ExampleDefaulter_Default() {
	mc := &v1alpha1.Memcached{Spec: v1alpha1.MemcachedSpec{Size: 3, CacheSizeMB: 256, MaxConnections: 4096}}
	if err := (webhook.Defaulter{}).Default(context.Background(), mc); err != nil {
		panic(err)
	}
	limit := mc.Spec.Resources.Limits[corev1.ResourceMemory]
	request := mc.Spec.Resources.Requests[corev1.ResourceMemory]
	fmt.Println("limit:", limit.String(), "request:", request.String())
	// Output:
	// limit: 320Mi request: 320Mi
}
