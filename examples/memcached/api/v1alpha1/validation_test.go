//go:build integration

package v1alpha1_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	"github.com/convergo-dev/convergo/testing/harness"
	"github.com/convergo-dev/convergo/testing/schematest"
)

// validMemcached returns the unstructured content of a valid Memcached that cases modify.
func validMemcached() map[string]any {
	return map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "Memcached",
		"metadata":   map[string]any{"name": "cache"},
		"spec": map[string]any{
			"size": int64(3),
		},
	}
}

// set and remove are the mutations the cases use, short for the table's sake.
var set, remove = schematest.Set, schematest.Remove

// TestInvalidSpecsAreRejected sends invalid Memcacheds to the real API server and checks that each is
// rejected with the message of the schema rule (OpenAPI or CEL) it breaks.
func TestInvalidSpecsAreRejected(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	limits := func(mem string) map[string]any { return map[string]any{"memory": mem} }
	type mutations = []schematest.Mutation
	cases := map[string]schematest.Rejection{
		"size missing": {
			Mutate: mutations{remove("spec.size")},
			Want:   `spec.size: Required value`,
		},
		"spec missing": {
			Mutate: mutations{remove("spec")},
			Want:   `spec: Required value`,
		},
		"size zero": {
			Mutate: mutations{set("spec.size", int64(0))},
			Want:   `spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1`,
		},
		"size negative": {
			Mutate: mutations{set("spec.size", int64(-2))},
			Want:   `spec.size in body should be greater than or equal to 1`,
		},
		"size above 100": {
			Mutate: mutations{set("spec.size", int64(101))},
			Want:   `spec.size: Invalid value: 101: spec.size in body should be less than or equal to 100`,
		},
		"size not a number": {
			Mutate: mutations{set("spec.size", "three")},
			Want:   `spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"`,
		},
		"size fractional": {
			Mutate: mutations{set("spec.size", 1.5)},
			Want:   `spec.size in body must be of type int32: "float64"`,
		},
		"image empty": {
			Mutate: mutations{set("spec.image", "")},
			Want:   `spec.image in body should be at least 1 chars long`,
		},
		"image with a space": {
			Mutate: mutations{set("spec.image", "memcached latest")},
			Want:   `spec.image in body should match '^\S+$'`,
		},
		"image too long": {
			Mutate: mutations{set("spec.image", "registry.example.com/"+strings.Repeat("a", 500))},
			Want:   `spec.image: Too long: may not be more than 512 bytes`,
		},
		"unknown image pull policy": {
			Mutate: mutations{set("spec.imagePullPolicy", "Sometimes")},
			Want:   `spec.imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`,
		},
		"port zero": {
			Mutate: mutations{set("spec.port", int64(0))},
			Want:   `spec.port in body should be greater than or equal to 1`,
		},
		"port above 65535": {
			Mutate: mutations{set("spec.port", int64(65536))},
			Want:   `spec.port in body should be less than or equal to 65535`,
		},
		"cache too small": {
			Mutate: mutations{set("spec.cacheSizeMB", int64(4))},
			Want:   `spec.cacheSizeMB in body should be greater than or equal to 8`,
		},
		"cache too large": {
			Mutate: mutations{set("spec.cacheSizeMB", int64(65537))},
			Want:   `spec.cacheSizeMB in body should be less than or equal to 65536`,
		},
		"too few connections": {
			Mutate: mutations{set("spec.maxConnections", int64(1))},
			Want:   `spec.maxConnections in body should be greater than or equal to 16`,
		},
		"too many connections": {
			Mutate: mutations{set("spec.maxConnections", int64(100000))},
			Want:   `spec.maxConnections in body should be less than or equal to 65536`,
		},
		"negative maxUnavailable": {
			Mutate: mutations{set("spec.maxUnavailable", int64(-1))},
			Want:   `spec.maxUnavailable in body should be greater than or equal to 0`,
		},
		"maxUnavailable equal to size (CEL)": {
			Mutate: mutations{set("spec.maxUnavailable", int64(3))},
			Want:   `maxUnavailable must be less than size so that a rollout keeps at least one memcached pod serving`,
		},
		"resource quantity that is not a quantity": {
			Mutate: mutations{set("spec.resources.limits", limits("lots"))},
			Want:   `spec.resources.limits.memory in body should match`,
		},
		"maxUnavailable above size (CEL)": {
			Mutate: mutations{set("spec.maxUnavailable", int64(5))},
			Want:   `spec: Invalid value: maxUnavailable must be less than size`,
		},
		"unknown field (strict field validation)": {
			Mutate: mutations{set("spec.replicas", int64(3))},
			Want:   `unknown field "spec.replicas"`,
		},
		"name that is not a DNS-1035 label (CEL)": {
			Mutate: mutations{set("metadata.name", "1cache")},
			Want:   `metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter): it names the Service`,
		},
		"name with a dot (CEL)": {
			Mutate: mutations{set("metadata.name", "my.cache")},
			Want:   `metadata.name must be a DNS-1035 label`,
		},
		"name longer than 63 characters (CEL)": {
			Mutate: mutations{set("metadata.name", "c"+strings.Repeat("a", 63))},
			Want:   `metadata.name must be at most 63 characters: it names the Service`,
		},
	}
	schematest.ExpectRejected(t, env.Client, ns, validMemcached, cases)
}

// TestValidSpecsAreAcceptedWithDefaults creates valid Memcacheds, including every boundary value, and
// checks the spec the API server stores, defaults included.
func TestValidSpecsAreAcceptedWithDefaults(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	defaulted := func(size int32) v1alpha1.MemcachedSpec {
		return v1alpha1.MemcachedSpec{Size: size, Image: v1alpha1.DefaultImage, Port: 11211, CacheSizeMB: 64, MaxConnections: 1024}
	}
	cases := map[string]struct {
		spec v1alpha1.MemcachedSpec
		want v1alpha1.MemcachedSpec
	}{
		"defaults": {
			spec: v1alpha1.MemcachedSpec{Size: 1},
			want: defaulted(1),
		},
		"largest size": {
			spec: v1alpha1.MemcachedSpec{Size: 100},
			want: defaulted(100),
		},
		"everything set at the limits": {
			spec: v1alpha1.MemcachedSpec{
				Size: 2, Image: "memcached:1.6", ImagePullPolicy: corev1.PullAlways, Port: 65535,
				CacheSizeMB: 128, MaxConnections: 65536, MaxUnavailable: ptr.To[int32](1),
				Resources: &corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi"), corev1.ResourceCPU: resource.MustParse("1")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi"), corev1.ResourceCPU: resource.MustParse("1")},
				},
			},
			want: v1alpha1.MemcachedSpec{
				Size: 2, Image: "memcached:1.6", ImagePullPolicy: corev1.PullAlways, Port: 65535,
				CacheSizeMB: 128, MaxConnections: 65536, MaxUnavailable: ptr.To[int32](1),
				Resources: &corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi"), corev1.ResourceCPU: resource.MustParse("1")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi"), corev1.ResourceCPU: resource.MustParse("1")},
				},
			},
		},
		"smallest port and cache, memory limit in gigabytes": {
			spec: v1alpha1.MemcachedSpec{
				Size: 1, Port: 1, CacheSizeMB: 8, MaxConnections: 16, MaxUnavailable: ptr.To[int32](0),
				Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1G")}},
			},
			want: v1alpha1.MemcachedSpec{
				Size: 1, Image: v1alpha1.DefaultImage, Port: 1, CacheSizeMB: 8, MaxConnections: 16, MaxUnavailable: ptr.To[int32](0),
				Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1G")}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := schematest.CreateAndGet(t, env.Client, &v1alpha1.Memcached{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "valid-"},
				Spec:       tc.spec,
			})
			if diff := cmp.Diff(tc.want, got.Spec, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("stored spec (-want +got):\n%s", diff)
			}
		})
	}
}
