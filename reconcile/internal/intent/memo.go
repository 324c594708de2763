package intent

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
