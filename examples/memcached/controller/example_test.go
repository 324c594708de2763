package controller_test

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/memcached/controller"
)

// Children turns a Memcached into its children: the Deployment first, then the Service that waits
// for it.
func ExampleChildren() {
	mc := &v1alpha1.Memcached{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sessions"},
		Spec:       v1alpha1.MemcachedSpec{Size: 3, Image: "memcached:1.6", Port: 11211, CacheSizeMB: 64, MaxConnections: 1024},
	}
	g, err := controller.Children(context.Background(), mc)
	if err != nil {
		panic(err)
	}
	order, err := g.Order()
	if err != nil {
		panic(err)
	}
	fmt.Println("apply order:", strings.Join(order, ", "))
	for _, n := range g.Nodes() {
		switch obj := n.Object().(type) {
		case *appsv1.Deployment:
			c := obj.Spec.Template.Spec.Containers[0]
			fmt.Printf("deployment %s: %d x %s %s\n", obj.Name, *obj.Spec.Replicas, c.Image, strings.Join(c.Args, " "))
		case *corev1.Service:
			fmt.Printf("service %s: port %d, depends on %v\n", obj.Name, obj.Spec.Ports[0].Port, n.Dependencies())
		}
	}
	// Output:
	// apply order: deployment, service
	// deployment sessions: 3 x memcached:1.6 --port=11211 --memory-limit=64 --conn-limit=1024
	// service sessions: port 11211, depends on [deployment]
}

// A spec the API server accepts but that could never run is reported as invalid: the reconciler marks
// the Memcached Stalled and does not retry until the spec changes.
func ExampleChildren_invalid() {
	mc := &v1alpha1.Memcached{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sessions"},
		Spec: v1alpha1.MemcachedSpec{
			Size: 1, Image: "memcached:1.6", Port: 11211, CacheSizeMB: 256, MaxConnections: 1024,
			Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
		},
	}
	_, err := controller.Children(context.Background(), mc)
	fmt.Println(err)
	// Output:
	// spec.resources.limits.memory (128Mi) is smaller than spec.cacheSizeMB (256Mi): memcached would be killed when the cache fills
}
