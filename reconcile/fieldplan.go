package reconcile

import (
	"reflect"
	"sync"
)

// typeMemo keeps, per type, what a function computed of it: reflection on a type is expensive, and
// the walks over objects ask about the same few types again and again. The zero value is ready.
type typeMemo[V any] struct {
	m sync.Map // reflect.Type → V
}

// of returns compute(t), computed at the first call for t (concurrent first calls may each compute
// it; they store the same value).
func (m *typeMemo[V]) of(t reflect.Type, compute func(reflect.Type) V) V {
	if v, ok := m.m.Load(t); ok {
		return v.(V)
	}
	v := compute(t)
	m.m.Store(t, v)
	return v
}

// Slimming and interning walk every cached object by reflection. reflect's Type.Field builds a whole
// StructField (name, tag, offset) at each call, which was half the cost of slimming a Deployment, so
// what the walks need of a struct type is worked out once per type here.

var exportedByType, contentByType typeMemo[[]int]

// exportedFields returns the indices of the exported fields of struct type t.
func exportedFields(t reflect.Type) []int {
	return exportedByType.of(t, func(t reflect.Type) []int { return fieldIndices(t, reflect.StructField.IsExported) })
}

var internedByType typeMemo[[]int]

// internedFields returns the indices of the exported fields of struct type t whose strings intern
// shares: all but a field named Message. A message (a condition's, an event's) is written for its
// object and usually names it ("ReplicaSet \"web-5d8f\" has successfully progressed."), so no other
// object repeats it.
func internedFields(t reflect.Type) []int {
	return internedByType.of(t, func(t reflect.Type) []int {
		return fieldIndices(t, func(f reflect.StructField) bool { return f.IsExported() && f.Name != "Message" })
	})
}

// contentFields returns the indices of the fields of a typed object's struct type t that are content
// (isContentField).
func contentFields(t reflect.Type) []int {
	return contentByType.of(t, func(t reflect.Type) []int { return fieldIndices(t, isContentField) })
}

// fieldIndices returns the indices of the fields of struct type t that keep says to walk.
func fieldIndices(t reflect.Type, keep func(reflect.StructField) bool) []int {
	var fs []int
	for i := range t.NumField() {
		if keep(t.Field(i)) {
			fs = append(fs, i)
		}
	}
	return fs
}

var flatByType typeMemo[bool]

// flat reports whether t is a record of scalars: a struct whose fields are scalars, pointers to
// scalars or such records (a Service's ports).
func flat(t reflect.Type) bool { return flatByType.of(t, isFlat) }

// isFlat is flat, worked out. A record that holds itself (through a pointer, at any depth) is not
// flat: such a type is a tree.
func isFlat(t reflect.Type) bool { return flatWalk(t, map[reflect.Type]bool{}) }

// flatWalk is isFlat for t, seen holding the struct types on the way down to it.
func flatWalk(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t.Kind() != reflect.Struct || seen[t] {
		return false
	}
	seen[t] = true
	defer delete(seen, t)
	for i := range t.NumField() {
		f := t.Field(i).Type
		if f.Kind() == reflect.Pointer {
			f = f.Elem()
		}
		switch f.Kind() {
		case reflect.Struct:
			if !flatWalk(f, seen) {
				return false
			}
		case reflect.Slice, reflect.Array, reflect.Map, reflect.Interface, reflect.Chan, reflect.Func:
			return false
		}
	}
	return true
}
