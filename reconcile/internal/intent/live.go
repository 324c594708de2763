package intent

import (
	"fmt"
	"maps"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// liveContent returns the content of a live object that the drift check of intent reads: for a typed
// object, the fields intent sets, encoded as Of encodes them, and nothing else. The check never looks
// at the rest (status, server metadata, the fields the API server defaults), so it is not converted:
// that was most of the cost of a converged child's check. Inside the fields kept, Go maps (labels, a
// selector, a ConfigMap's data) are encoded whole, for the check of atomic maps, and every element of
// a list is encoded with the fields any intent element sets, for matching by key. A struct of which
// intent names no field that is set is encoded whole, so the check sees what it would see of the
// whole object. Unstructured objects are used as they are.
func liveContent(obj client.Object, intent map[string]any) (map[string]any, error) {
	if u, ok := obj.(runtime.Unstructured); ok {
		return u.UnstructuredContent(), nil
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("convert live %T: want a pointer to a struct", obj)
	}
	out := map[string]any{}
	if err := encodeFields(v.Elem(), intent, out); err != nil {
		return nil, fmt.Errorf("convert live %T: %w", obj, err)
	}
	return out, nil
}

// liveValue is encodeValue of a live field, limited by guide (the intent's value there): a struct to
// the fields guide names, a list's elements to the fields guide's elements name. Anything else is
// encoded whole. mk are the marshalers of v's type.
func liveValue(v reflect.Value, omitEmpty bool, mk marshalers, guide any) (any, bool, error) {
	switch g := guide.(type) {
	case map[string]any:
		switch {
		case v.Kind() == reflect.Struct && mk.none():
			return liveStruct(v, g)
		case v.Kind() == reflect.Pointer && !v.IsNil() && !mk.json && v.Type().Elem().Kind() == reflect.Struct &&
			marshalersOf(v.Type().Elem()).none():
			// A pointer to a struct is set even when the struct is empty: emptyDir: {}.
			enc, keep, err := liveStruct(v.Elem(), g)
			if err != nil || keep {
				return enc, keep, err
			}
			return map[string]any{}, true, nil
		}
	case []any:
		if v.Kind() == reflect.Slice && v.Len() > 0 && v.Type().Elem().Kind() != reflect.Uint8 && mk.none() {
			elem, emk := elementGuide(g), marshalersOf(v.Type().Elem())
			out := make([]any, v.Len())
			for i := range v.Len() {
				enc, err := liveElem(v.Index(i), emk, elem)
				if err != nil {
					return nil, false, at(index(i), err)
				}
				out[i] = enc
			}
			return out, true, nil
		}
	}
	return encodeValueOf(v, omitEmpty, mk)
}

// liveElem is encodeElem of a list element whose type has the marshalers mk, limited by guide as
// liveValue.
func liveElem(v reflect.Value, mk marshalers, guide any) (any, error) {
	if !mk.none() {
		enc, _, err := encodeElemOf(v, mk)
		return enc, err
	}
	enc, keep, err := liveValue(v, false, mk, guide)
	if err != nil || keep {
		return enc, err
	}
	enc, _, err = encodeElemOf(v, mk) // not set: its zero form (null, {}, [])
	return enc, err
}

// liveStruct encodes the fields of struct v that guide names; when none of them is set, the whole
// struct (so that it is left out, or not, as Of's encoding of it would be).
func liveStruct(v reflect.Value, guide map[string]any) (any, bool, error) {
	out := map[string]any{}
	if err := encodeFields(v, guide, out); err != nil {
		return nil, false, err
	}
	if len(out) == 0 {
		return encodeStruct(v)
	}
	return out, true, nil
}

// none reports whether a type with marshalers mk has no encoding of its own: a struct is encoded
// field by field, a list element by element. (A string type's text encoding is not used either;
// treating it as an encoding here only sends the value to encodeValue whole.)
func (mk marshalers) none() bool { return !mk.json && !mk.pointerJSON && !mk.text }

// elementGuide is the guide of the elements of a list whose intent is g: the union of the fields its
// elements set.
func elementGuide(g []any) any {
	if len(g) == 0 {
		return nil
	}
	u := g[0]
	for _, e := range g[1:] {
		u = unionGuide(u, e)
	}
	return u
}

// unionGuide returns a guide naming every field a or b names; nil (encode whole) where they disagree
// on the shape of a value.
func unionGuide(a, b any) any {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok {
			return nil
		}
		u := maps.Clone(a)
		for k, bv := range bm {
			if av, ok := u[k]; ok {
				u[k] = unionGuide(av, bv)
			} else {
				u[k] = bv
			}
		}
		return u
	case []any:
		bl, ok := b.([]any)
		if !ok {
			return nil
		}
		return append(append(make([]any, 0, len(a)+len(bl)), a...), bl...)
	}
	return nil
}
