package reconcile

import (
	"reflect"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxInterned is the length of the longest string intern shares: longer ones (hashes, digests, page
// content) are seldom repeated, and sharing one would only add an entry to the process's table.
const maxInterned = 64

// intern returns the process's shared copy of s (sharedStrings), for strings that objects repeat:
// label keys and values, annotation keys, namespaces, owner names and kinds, condition reasons. A
// decoded object holds its own copy of each; a cache of many similar objects then holds the same
// strings many times over.
func intern(s string) string {
	if s == "" || len(s) > maxInterned {
		return s
	}
	return sharedStrings.intern(s)
}

// sharedStrings is the table intern shares strings through.
var sharedStrings = newStringTable(minStringGeneration, minStringGenerationAge, time.Now)

// A generation of sharedStrings retires only once it holds minStringGeneration strings and is
// minStringGenerationAge old: the strings of a burst (the lists of a restart, every object new to the
// process) stay in one generation and are shared as they come in again from other kinds.
const (
	minStringGeneration    = 1024
	minStringGenerationAge = time.Minute
)

// stringTable hands out one copy of each string it is given, for a while: in generations. The
// current generation keeps every string given since it began; a string given again while it is in
// the old generation moves on to the current one, so the strings the cache's objects keep bringing in
// stay shared. A generation retires (becomes the old one, and the old one is dropped) once it holds as
// many strings as the old one, at least minSize, and got its first string at least minAge ago. So a
// string no object brought in for a whole generation (of a deleted object) leaves the table, and a
// string brought in at least once a generation keeps its one copy. Generations never shrink: the
// table holds at most about twice the most strings ever brought in within minAge (a restart's lists),
// and after the number of objects falls it keeps that much until as many strings have come in again.
// Dropping a string from the table frees nothing an object still holds; a later object bringing it in
// gets a copy of its own.
//
// Package unique shares strings with weak pointers instead. But at a restart every string is new to
// the process, and unique's weak handle and cleanup for each were 8% of a restarted manager's CPU; a
// string new to this table costs a map insert and a copy.
type stringTable struct {
	mu       sync.RWMutex
	cur, old map[string]string
	born     time.Time // when cur got its first string

	minSize int
	minAge  time.Duration
	now     func() time.Time
}

func newStringTable(minSize int, minAge time.Duration, now func() time.Time) *stringTable {
	return &stringTable{cur: map[string]string{}, minSize: minSize, minAge: minAge, now: now}
}

// intern returns the table's copy of s, adding a copy of s if it has none.
func (t *stringTable) intern(s string) string {
	t.mu.RLock()
	v, ok := t.cur[s]
	t.mu.RUnlock()
	if ok {
		return v
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.cur[s]; ok {
		return v
	}
	if v, ok = t.old[s]; !ok {
		v = strings.Clone(s) // s may be part of a larger string the object's decoder allocated
	}
	if len(t.cur) == 0 {
		t.born = t.now()
	}
	t.cur[v] = v
	if len(t.cur) >= max(t.minSize, len(t.old)) && t.now().Sub(t.born) >= t.minAge {
		t.old, t.cur = t.cur, map[string]string{}
	}
	return v
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
		for _, i := range internedFields(v.Type()) {
			if f := v.Field(i); f.Type() != typeMeta && f.Type() != objectMeta {
				internValue(f)
			}
		}
	}
}

// objectMeta is the type of the inline ObjectMeta of typed objects, interned field by field above;
// metaTime holds no string.
var objectMeta, metaTime = reflect.TypeFor[metav1.ObjectMeta](), reflect.TypeFor[metav1.Time]()

// internMap interns the keys and values of m in place and returns m. The value of LabelAppliedIntent
// (a label, or an annotation on a Service) is left as it is: its digests are the child's own, and a
// string no other object repeats would only add an entry to the table.
func internMap(m map[string]string) map[string]string {
	for k, v := range m {
		if k != LabelAppliedIntent {
			v = intern(v)
		}
		// Assigning to a key already in the map stores the key given (Go's maps do so for strings,
		// whose bytes may live elsewhere), so the map's key becomes the shared copy; no entry is added.
		m[intern(k)] = v
	}
	return m
}

// internValue interns every string in v, a settable value: struct fields (but a Message, see
// internedFields), pointers, slices and string maps (in place), recursively.
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
		for _, i := range internedFields(v.Type()) {
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
		if m, ok := v.Interface().(map[string]string); ok {
			internMap(m)
		}
	}
}
