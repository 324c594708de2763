package kobj

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kind returns obj's kind from its TypeMeta or, when that is empty (typed objects read from a cache
// carry none), the name of its Go type.
func Kind(obj runtime.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// DescribeKey names an object of the given kind in errors, logs and events: "Kind namespace/name", or
// "Kind name" for a cluster-scoped object.
func DescribeKey(kind string, key client.ObjectKey) string {
	if key.Namespace == "" {
		return kind + " " + key.Name
	}
	return kind + " " + key.Namespace + "/" + key.Name
}

// Describe is DescribeKey for obj, with its kind from Kind.
func Describe(obj client.Object) string {
	return DescribeKey(Kind(obj), client.ObjectKeyFromObject(obj))
}

// New returns an empty object of obj's concrete type (a pointer to a struct, or an
// *unstructured.Unstructured carrying obj's apiVersion and kind, without which it cannot be read).
func New(obj client.Object) client.Object {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		out := &unstructured.Unstructured{}
		out.SetGroupVersionKind(u.GroupVersionKind())
		return out
	}
	out := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(client.Object)
	out.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	return out
}

// NewLike returns New(obj) carrying obj's name and namespace. Decoding a response into it, rather than
// into obj, leaves nothing stale from obj behind.
func NewLike(obj client.Object) client.Object {
	out := New(obj)
	out.SetName(obj.GetName())
	out.SetNamespace(obj.GetNamespace())
	return out
}

// CopyInto replaces *dst with *src, keeping dst's apiVersion and kind when src carries none. Both must be
// pointers of the same type. src must not be used afterwards: dst may share its maps and slices.
func CopyInto(dst, src client.Object) error {
	dv, sv := reflect.ValueOf(dst), reflect.ValueOf(src)
	if dv.Type() != sv.Type() || dv.Kind() != reflect.Pointer || dv.IsNil() || sv.IsNil() {
		return fmt.Errorf("cannot copy %T into %T", src, dst)
	}
	gvk := dst.GetObjectKind().GroupVersionKind()
	dv.Elem().Set(sv.Elem())
	if dst.GetObjectKind().GroupVersionKind().Empty() {
		dst.GetObjectKind().SetGroupVersionKind(gvk)
	}
	return nil
}
