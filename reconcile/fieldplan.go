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

// reflect's Type.Field builds a whole StructField (name, tag, offset) at each call, so what the walks
// over objects need of a struct type is worked out once per type here.

var contentByType typeMemo[[]int]

// contentFields returns the indices of the fields of a typed object's struct type t that are content
// (isContentField).
func contentFields(t reflect.Type) []int {
	return contentByType.of(t, func(t reflect.Type) []int {
		var fs []int
		for i := range t.NumField() {
			if isContentField(t.Field(i)) {
				fs = append(fs, i)
			}
		}
		return fs
	})
}
