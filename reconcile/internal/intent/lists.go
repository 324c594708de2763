package intent

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// kindSchema is the structured-merge-diff schema of one kind: where the drift check learns whether a
// list is atomic (replaced as a whole by server-side apply), a set, or a map keyed by some fields.
type kindSchema struct {
	s    *smdschema.Schema
	root smdschema.TypeRef
}

// builtinTypes converts built-in kinds to typed values with the schemas client-go ships. Parsing them
// takes about 0.1 s and 1 MiB, once per process, on the first Apply of a built-in kind.
var builtinTypes = sync.OnceValue(func() managedfields.TypeConverter {
	return applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)
})

// kindSchemas caches schemaFor per GroupVersionKind (a nil *kindSchema for kinds without one).
var kindSchemas sync.Map

// schemaFor returns the schema of a built-in kind, or nil for a kind client-go has no schema of (custom
// resources): their lists are compared by the rule for lists of unknown type (see isSubset).
func schemaFor(gvk schema.GroupVersionKind) *kindSchema {
	if v, ok := kindSchemas.Load(gvk); ok {
		return v.(*kindSchema)
	}
	var ks *kindSchema
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if tv, err := builtinTypes().ObjectToTyped(u); err == nil {
		ks = &kindSchema{s: tv.Schema(), root: tv.TypeRef()}
	}
	kindSchemas.Store(gvk, ks)
	return ks
}

// typeAt is a position in a kind's schema during the drift check; the zero value (no schema) means
// the type is unknown.
type typeAt struct {
	ks   *kindSchema
	atom smdschema.Atom
	ok   bool
}

func (ks *kindSchema) at(tr smdschema.TypeRef) typeAt {
	if ks == nil {
		return typeAt{}
	}
	atom, ok := ks.s.Resolve(tr)
	return typeAt{ks: ks, atom: atom, ok: ok}
}

// rootType is the position of the whole object.
func (ks *kindSchema) rootType() typeAt {
	if ks == nil {
		return typeAt{}
	}
	return ks.at(ks.root)
}

// field returns the type of a map's member name.
func (t typeAt) field(name string) typeAt {
	if !t.ok || t.atom.Map == nil {
		return typeAt{}
	}
	if f, ok := t.atom.Map.FindField(name); ok {
		return t.ks.at(f.Type)
	}
	if t.atom.Map.ElementType != (smdschema.TypeRef{}) {
		return t.ks.at(t.atom.Map.ElementType)
	}
	return typeAt{}
}

// atomicMap reports whether the type is a map of free keys (no declared fields) that server-side
// apply replaces as a whole, such as a Service's selector.
func (t typeAt) atomicMap() bool {
	return t.ok && t.atom.Map != nil && len(t.atom.Map.Fields) == 0 &&
		t.atom.Map.ElementRelationship == smdschema.Atomic
}

// listKind is how server-side apply merges a list.
type listKind int

const (
	// listUnknown: no schema; compared as an ordered subsequence.
	listUnknown listKind = iota
	// listAtomic: replaced as a whole; the live list must hold exactly the intent's elements.
	listAtomic
	// listSet: a set of scalars; every intent element must be present, others may be added.
	listSet
	// listMap: elements keyed by some fields; each intent element must be matched by key, others may
	// be added.
	listMap
)

// list returns how the list at t merges, its key fields, and the type of its elements.
func (t typeAt) list() (listKind, []string, typeAt) {
	if !t.ok || t.atom.List == nil {
		return listUnknown, nil, typeAt{}
	}
	l := t.atom.List
	elem := t.ks.at(l.ElementType)
	switch {
	case l.ElementRelationship == smdschema.Atomic:
		return listAtomic, nil, elem
	case l.ElementRelationship == smdschema.Associative && len(l.Keys) > 0:
		return listMap, l.Keys, elem
	case l.ElementRelationship == smdschema.Associative:
		return listSet, nil, elem
	}
	return listUnknown, nil, elem
}
