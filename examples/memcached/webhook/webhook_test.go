package webhook_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/memcached/webhook"
)

func TestDefault(t *testing.T) {
	memory := func(limit, request string) *corev1.ResourceRequirements {
		r := &corev1.ResourceRequirements{}
		if limit != "" {
			r.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limit)}
		}
		if request != "" {
			r.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(request)}
		}
		return r
	}
	tests := map[string]struct {
		spec v1alpha1.MemcachedSpec
		want *corev1.ResourceRequirements
	}{
		"schema defaults: 64Mi of cache, 1024 connections": {
			spec: v1alpha1.MemcachedSpec{CacheSizeMB: 64, MaxConnections: 1024},
			want: memory("104Mi", "104Mi"),
		},
		"a large cache with few connections": {
			spec: v1alpha1.MemcachedSpec{CacheSizeMB: 4096, MaxConnections: 16},
			want: memory("4129Mi", "4129Mi"),
		},
		"connection buffers round up to a whole Mi": {
			spec: v1alpha1.MemcachedSpec{CacheSizeMB: 8, MaxConnections: 100},
			want: memory("41Mi", "41Mi"),
		},
		"a limit the user set is kept, and is the request": {
			spec: v1alpha1.MemcachedSpec{CacheSizeMB: 64, MaxConnections: 1024, Resources: memory("1Gi", "")},
			want: memory("1Gi", "1Gi"),
		},
		"a request the user set is kept": {
			spec: v1alpha1.MemcachedSpec{CacheSizeMB: 64, MaxConnections: 1024, Resources: memory("", "80Mi")},
			want: memory("104Mi", "80Mi"),
		},
		"a request above the computed limit raises the limit": {
			spec: v1alpha1.MemcachedSpec{CacheSizeMB: 64, MaxConnections: 1024, Resources: memory("", "2Gi")},
			want: memory("2Gi", "2Gi"),
		},
		"cpu is left alone": {
			spec: v1alpha1.MemcachedSpec{CacheSizeMB: 64, MaxConnections: 1024, Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			}},
			want: &corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("104Mi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("104Mi")},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			mc := &v1alpha1.Memcached{Spec: tc.spec}
			if err := (webhook.Defaulter{}).Default(t.Context(), mc); err != nil {
				t.Fatalf("Default: %v", err)
			}
			if diff := cmp.Diff(tc.want, mc.Spec.Resources, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("spec.resources (-want +got):\n%s", diff)
			}
		})
	}
}
