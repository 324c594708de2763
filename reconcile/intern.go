package reconcile

import (
	"reflect"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxInterned is the length of the longest string intern shares: longer ones (hashes, digests, page
// content) are seldom repeated, and sharing one would only add an entry to the process's table.
const maxInterned = 64

// intern returns the process's one copy of s (package unique), for strings that objects repeat:
// label keys and values, annotation keys, namespaces, owner names and kinds, condition reasons. A
// decoded object holds its own copy of each; a cache of many similar objects then holds the same
// strings many times over.
func intern(s string) string {
	if s == "" || len(s) > maxInterned {
		return s
	}
	return unique.Make(s).Value()
}

// internObject makes obj's strings (of a typed object all of them, of an unstructured one its metadata)
// shared with the other objects of the process (see intern). The object's own UID and
// resourceVersion, which no other object repeats, are left as they are.
func internObject(obj client.Object) {
	obj.SetNamespace(intern(obj.GetNamespace()))
	obj.SetName(intern(obj.GetName()))
	obj.SetLabels(internMap(obj.GetLabels()))
	obj.SetAnnotations(internMap(obj.GetAnnotations()))
	if refs := obj.GetOwnerReferences(); len(refs) > 0 {
		for i := range refs {
			r := &refs[i]
			// The owner's UID is repeated by every child of that owner.
			r.APIVersion, r.Kind, r.Name, r.UID = intern(r.APIVersion), intern(r.Kind), intern(r.Name), types.UID(intern(string(r.UID)))
		}
		obj.SetOwnerReferences(refs)
	}
	if fins := obj.GetFinalizers(); len(fins) > 0 {
		for i := range fins {
			fins[i] = intern(fins[i])
		}
		obj.SetFinalizers(fins)
	}
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return
	}
	if v := reflect.ValueOf(obj); v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		v = v.Elem()
		for _, i := range exportedFields(v.Type()) {
			if f := v.Field(i); f.Type() != typeMeta && f.Type() != objectMeta {
				internValue(f)
			}
		}
	}
}

// objectMeta is the type of the inline ObjectMeta of typed objects, interned field by field above;
// metaTime holds no string.
var objectMeta, metaTime = reflect.TypeFor[metav1.ObjectMeta](), reflect.TypeFor[metav1.Time]()

// internMap returns a copy of m with its keys and values interned.
func internMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[intern(k)] = intern(v)
	}
	return out
}

// internValue interns every string in v, a settable value: struct fields, pointers, slices and
// string maps, recursively.
func internValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString(intern(v.String()))
		}
	case reflect.Struct:
		if v.Type() == metaTime {
			return
		}
		for _, i := range exportedFields(v.Type()) {
			internValue(v.Field(i))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			internValue(v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			internValue(v.Index(i))
		}
	case reflect.Map:
		if m, ok := v.Interface().(map[string]string); ok && v.CanSet() {
			v.Set(reflect.ValueOf(internMap(m)))
		}
	}
}
