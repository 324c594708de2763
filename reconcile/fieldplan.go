package reconcile

import (
	"reflect"
	"sync"
)

// Slimming and interning walk every cached object by reflection. reflect's Type.Field builds a whole
// StructField (name, tag, offset) at each call, which was half the cost of slimming a Deployment, so
// what the walks need of a struct type is worked out once per type here.

// exportedByType caches exportedFields (reflect.Type → []int).
var exportedByType sync.Map

// exportedFields returns the indices of the exported fields of struct type t.
func exportedFields(t reflect.Type) []int {
	if fs, ok := exportedByType.Load(t); ok {
		return fs.([]int)
	}
	var fs []int
	for i := range t.NumField() {
		if t.Field(i).IsExported() {
			fs = append(fs, i)
		}
	}
	exportedByType.Store(t, fs)
	return fs
}

// contentByType caches contentFields (reflect.Type → []int).
var contentByType sync.Map

// contentFields returns the indices of the fields of a typed object's struct type t that are content
// (isContentField).
func contentFields(t reflect.Type) []int {
	if fs, ok := contentByType.Load(t); ok {
		return fs.([]int)
	}
	var fs []int
	for i := range t.NumField() {
		if isContentField(t.Field(i)) {
			fs = append(fs, i)
		}
	}
	contentByType.Store(t, fs)
	return fs
}

// flatByType caches flat (reflect.Type → bool).
var flatByType sync.Map

// flat reports whether t is a record of scalars: a struct whose fields are scalars, pointers to
// scalars or such records (a Service's ports).
func flat(t reflect.Type) bool {
	if f, ok := flatByType.Load(t); ok {
		return f.(bool)
	}
	f := isFlat(t)
	flatByType.Store(t, f)
	return f
}

// isFlat is flat, worked out.
func isFlat(t reflect.Type) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	for i := range t.NumField() {
		f := t.Field(i).Type
		if f.Kind() == reflect.Pointer {
			f = f.Elem()
		}
		switch f.Kind() {
		case reflect.Struct:
			if !flat(f) {
				return false
			}
		case reflect.Slice, reflect.Array, reflect.Map, reflect.Interface, reflect.Chan, reflect.Func:
			return false
		}
	}
	return true
}
