package controller_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/memcached/controller"
	"github.com/convergo-dev/convergo/reconcile"
)

// TestChildrenRejectsResourcesThatCannotRun checks the run-time validation of resources, which the
// schema cannot express cheaply.
func TestChildrenRejectsResourcesThatCannotRun(t *testing.T) {
	q := resource.MustParse
	cases := map[string]struct {
		cache    int32
		requests corev1.ResourceList
		limits   corev1.ResourceList
		wantErr  string
	}{
		"no resources":                 {cache: 64},
		"limit equal to the cache":     {cache: 64, limits: corev1.ResourceList{corev1.ResourceMemory: q("64Mi")}},
		"limit in decimal units":       {cache: 64, limits: corev1.ResourceList{corev1.ResourceMemory: q("1G")}},
		"requests equal to the limits": {cache: 64, requests: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")}, limits: corev1.ResourceList{corev1.ResourceCPU: q("1000m"), corev1.ResourceMemory: q("1Gi")}},
		"requests without limits":      {cache: 64, requests: corev1.ResourceList{corev1.ResourceCPU: q("4"), corev1.ResourceMemory: q("8Gi")}},
		"limit below the cache": {
			cache: 128, limits: corev1.ResourceList{corev1.ResourceMemory: q("100Mi")},
			wantErr: "spec.resources.limits.memory (100Mi) is smaller than spec.cacheSizeMB (128Mi): memcached would be killed when the cache fills",
		},
		"cpu request above the limit": {
			cache: 64, requests: corev1.ResourceList{corev1.ResourceCPU: q("2")}, limits: corev1.ResourceList{corev1.ResourceCPU: q("500m")},
			wantErr: "spec.resources.requests.cpu (2) exceeds spec.resources.limits.cpu (500m)",
		},
		"negative limit": {
			cache: 64, limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: q("-100m")},
			wantErr: "spec.resources.limits.ephemeral-storage (-100m) must not be negative",
		},
		"hugepages": {
			cache: 64, limits: corev1.ResourceList{"hugepages-2Mi": q("8")},
			wantErr: "spec.resources.limits.hugepages-2Mi is not supported: use cpu, memory or ephemeral-storage",
		},
		"ephemeral-storage request above the limit": {
			cache: 64, requests: corev1.ResourceList{corev1.ResourceEphemeralStorage: q("2Gi")}, limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: q("1Gi")},
			wantErr: "spec.resources.requests.ephemeral-storage (2Gi) exceeds spec.resources.limits.ephemeral-storage (1Gi)",
		},
		"both wrong": {
			cache: 64, requests: corev1.ResourceList{corev1.ResourceMemory: q("256Mi")}, limits: corev1.ResourceList{corev1.ResourceMemory: q("32Mi")},
			wantErr: "spec.resources.limits.memory (32Mi) is smaller than spec.cacheSizeMB (64Mi): memcached would be killed when the cache fills\n" +
				"spec.resources.requests.memory (256Mi) exceeds spec.resources.limits.memory (32Mi)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mc := &v1alpha1.Memcached{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cache"},
				Spec:       v1alpha1.MemcachedSpec{Size: 1, Image: "memcached", Port: 11211, CacheSizeMB: tc.cache, MaxConnections: 1024},
			}
			if tc.requests != nil || tc.limits != nil {
				mc.Spec.Resources = &corev1.ResourceRequirements{Requests: tc.requests, Limits: tc.limits}
			}
			g, err := controller.Children(t.Context(), mc)
			if tc.wantErr == "" {
				if err != nil || g == nil {
					t.Fatalf("Children: graph %v, error %v; want a graph", g, err)
				}
				return
			}
			var invalid *reconcile.InvalidSpecError
			if !errors.As(err, &invalid) {
				t.Fatalf("error %v (%T), want a *reconcile.InvalidSpecError", err, err)
			}
			if diff := cmp.Diff(tc.wantErr, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}
