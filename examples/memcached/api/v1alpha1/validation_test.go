package v1alpha1_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	"github.com/convergo-dev/convergo/testing/harness"
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

// set returns a mutation that sets the value at the dot-separated path.
func set(path string, value any) func(map[string]any) {
	return func(obj map[string]any) {
		if err := unstructured.SetNestedField(obj, value, strings.Split(path, ".")...); err != nil {
			panic(err)
		}
	}
}

// remove returns a mutation that removes the field at the dot-separated path.
func remove(path string) func(map[string]any) {
	return func(obj map[string]any) { unstructured.RemoveNestedField(obj, strings.Split(path, ".")...) }
}

// TestInvalidSpecsAreRejected sends invalid Memcacheds to the real API server and checks that each is
// rejected with the message of the schema rule (OpenAPI or CEL) it breaks.
func TestInvalidSpecsAreRejected(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	limits := func(mem string) map[string]any { return map[string]any{"memory": mem} }
	cases := map[string]struct {
		mutate []func(map[string]any)
		want   string
	}{
		"size missing": {
			mutate: []func(map[string]any){remove("spec.size")},
			want:   `spec.size: Required value`,
		},
		"spec missing": {
			mutate: []func(map[string]any){remove("spec")},
			want:   `spec: Required value`,
		},
		"size zero": {
			mutate: []func(map[string]any){set("spec.size", int64(0))},
			want:   `spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1`,
		},
		"size negative": {
			mutate: []func(map[string]any){set("spec.size", int64(-2))},
			want:   `spec.size in body should be greater than or equal to 1`,
		},
		"size above 100": {
			mutate: []func(map[string]any){set("spec.size", int64(101))},
			want:   `spec.size: Invalid value: 101: spec.size in body should be less than or equal to 100`,
		},
		"size not a number": {
			mutate: []func(map[string]any){set("spec.size", "three")},
			want:   `spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"`,
		},
		"size fractional": {
			mutate: []func(map[string]any){set("spec.size", 1.5)},
			want:   `spec.size in body must be of type int32: "float64"`,
		},
		"image empty": {
			mutate: []func(map[string]any){set("spec.image", "")},
			want:   `spec.image in body should be at least 1 chars long`,
		},
		"image with a space": {
			mutate: []func(map[string]any){set("spec.image", "memcached latest")},
			want:   `spec.image in body should match '^\S+$'`,
		},
		"image too long": {
			mutate: []func(map[string]any){set("spec.image", "registry.example.com/"+strings.Repeat("a", 500))},
			want:   `spec.image: Too long: may not be more than 512 bytes`,
		},
		"unknown image pull policy": {
			mutate: []func(map[string]any){set("spec.imagePullPolicy", "Sometimes")},
			want:   `spec.imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`,
		},
		"port zero": {
			mutate: []func(map[string]any){set("spec.port", int64(0))},
			want:   `spec.port in body should be greater than or equal to 1`,
		},
		"port above 65535": {
			mutate: []func(map[string]any){set("spec.port", int64(65536))},
			want:   `spec.port in body should be less than or equal to 65535`,
		},
		"cache too small": {
			mutate: []func(map[string]any){set("spec.cacheSizeMB", int64(4))},
			want:   `spec.cacheSizeMB in body should be greater than or equal to 8`,
		},
		"cache too large": {
			mutate: []func(map[string]any){set("spec.cacheSizeMB", int64(65537))},
			want:   `spec.cacheSizeMB in body should be less than or equal to 65536`,
		},
		"too few connections": {
			mutate: []func(map[string]any){set("spec.maxConnections", int64(1))},
			want:   `spec.maxConnections in body should be greater than or equal to 16`,
		},
		"too many connections": {
			mutate: []func(map[string]any){set("spec.maxConnections", int64(100000))},
			want:   `spec.maxConnections in body should be less than or equal to 65536`,
		},
		"negative maxUnavailable": {
			mutate: []func(map[string]any){set("spec.maxUnavailable", int64(-1))},
			want:   `spec.maxUnavailable in body should be greater than or equal to 0`,
		},
		"maxUnavailable equal to size (CEL)": {
			mutate: []func(map[string]any){set("spec.maxUnavailable", int64(3))},
			want:   `maxUnavailable must be less than size so that a rollout keeps at least one memcached pod serving`,
		},
		"resource quantity that is not a quantity": {
			mutate: []func(map[string]any){set("spec.resources.limits", limits("lots"))},
			want:   `spec.resources.limits.memory in body should match`,
		},
		"maxUnavailable above size (CEL)": {
			mutate: []func(map[string]any){set("spec.maxUnavailable", int64(5))},
			want:   `spec: Invalid value: maxUnavailable must be less than size`,
		},
		"unknown field (strict field validation)": {
			mutate: []func(map[string]any){set("spec.replicas", int64(3))},
			want:   `unknown field "spec.replicas"`,
		},
		"name that is not a DNS-1035 label (CEL)": {
			mutate: []func(map[string]any){set("metadata.name", "1cache")},
			want:   `metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter): it names the Service`,
		},
		"name with a dot (CEL)": {
			mutate: []func(map[string]any){set("metadata.name", "my.cache")},
			want:   `metadata.name must be a DNS-1035 label`,
		},
		"name longer than 63 characters (CEL)": {
			mutate: []func(map[string]any){set("metadata.name", "c"+strings.Repeat("a", 63))},
			want:   `metadata.name must be at most 63 characters: it names the Service`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := validMemcached()
			for _, m := range tc.mutate {
				m(obj)
			}
			u := &unstructured.Unstructured{Object: obj}
			u.SetNamespace(ns)
			err := env.Client.Create(t.Context(), u, client.FieldValidation(metav1.FieldValidationStrict))
			if err == nil {
				t.Fatalf("the API server accepted the Memcached; want a rejection containing %q:\n%s", tc.want, harness.ObjectYAML(u))
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("rejection does not contain the schema's message\n got: %v\nwant: %s", err, tc.want)
			}
		})
	}
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
			m := &v1alpha1.Memcached{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "valid-"},
				Spec:       tc.spec,
			}
			if err := env.Client.Create(t.Context(), m, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
				t.Fatalf("create: %v", err)
			}
			var got v1alpha1.Memcached
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(m), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Spec, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("stored spec (-want +got):\n%s", diff)
			}
		})
	}
}
