package intent

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// encodeValue encodes the value of a struct field. keep=false means "not set": the field is left
// out. omitEmpty is the field's omitempty (or omitzero) tag option.
func encodeValue(v reflect.Value, omitEmpty bool) (any, bool, error) {
	if !v.IsValid() {
		return nil, false, nil
	}
	return encodeValueOf(v, omitEmpty, marshalersOf(v.Type()))
}

// encodeValueOf is encodeValue of a valid v whose type has the marshalers mk (worked out once per
// struct field, list or map rather than once per value).
func encodeValueOf(v reflect.Value, omitEmpty bool, mk marshalers) (any, bool, error) {
	if enc, handled, keep, err := encodeMarshaler(v, mk, false); handled {
		return enc, keep, err
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil, false, nil
		}
		if v.Elem().Kind() == reflect.Struct {
			// A pointer to a struct is set even when the struct is empty: emptyDir: {}.
			enc, keep, err := encodeValue(v.Elem(), false)
			if err != nil || keep {
				return enc, keep, err
			}
			return map[string]any{}, true, nil
		}
		return encodeElem(v.Elem())
	case reflect.Interface:
		if v.IsNil() {
			return nil, false, nil
		}
		return encodeValue(v.Elem(), omitEmpty)
	case reflect.Struct:
		return encodeStruct(v)
	case reflect.Map:
		if v.Len() == 0 {
			return nil, false, nil
		}
		if v.Type().Key().Kind() != reflect.String {
			return nil, false, fmt.Errorf("unsupported map key type %s", v.Type().Key())
		}
		out := make(map[string]any, v.Len())
		emk := marshalersOf(v.Type().Elem())
		iter := v.MapRange()
		for iter.Next() {
			key := iter.Key().String()
			enc, _, err := encodeElemOf(iter.Value(), emk)
			if err != nil {
				return nil, false, at("."+key, err)
			}
			out[key] = enc // a map entry is set even when its value is zero
		}
		return out, true, nil
	case reflect.Slice, reflect.Array:
		if v.Len() == 0 {
			return nil, false, nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, v.Len())
			reflect.Copy(reflect.ValueOf(b), v)
			return base64.StdEncoding.EncodeToString(b), true, nil
		}
		out := make([]any, v.Len())
		emk := marshalersOf(v.Type().Elem())
		for i := range v.Len() {
			enc, _, err := encodeElemOf(v.Index(i), emk)
			if err != nil {
				return nil, false, at(index(i), err)
			}
			out[i] = enc // an element's position is meaningful even when it is empty
		}
		return out, true, nil
	case reflect.String:
		if omitEmpty && v.Len() == 0 {
			return nil, false, nil
		}
		return v.String(), true, nil
	case reflect.Bool:
		if omitEmpty && !v.Bool() {
			return nil, false, nil
		}
		return v.Bool(), true, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if omitEmpty && v.Int() == 0 {
			return nil, false, nil
		}
		return v.Int(), true, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if omitEmpty && v.Uint() == 0 {
			return nil, false, nil
		}
		if v.Uint() > math.MaxInt64 {
			return float64(v.Uint()), true, nil
		}
		return int64(v.Uint()), true, nil
	case reflect.Float32, reflect.Float64:
		if omitEmpty && v.Float() == 0 {
			return nil, false, nil
		}
		return normaliseFloat(v.Float()), true, nil
	}
	return nil, false, fmt.Errorf("unsupported type %s", v.Type())
}

// encodeElem encodes a list element, a map value or the target of a pointer: such a value is set
// even when it is zero or empty (a JSON null for nil pointers, slices and maps).
func encodeElem(v reflect.Value) (any, bool, error) {
	if !v.IsValid() {
		return nil, true, nil
	}
	return encodeElemOf(v, marshalersOf(v.Type()))
}

// encodeElemOf is encodeElem of a valid v whose type has the marshalers mk.
func encodeElemOf(v reflect.Value, mk marshalers) (any, bool, error) {
	if enc, handled, keep, err := encodeMarshaler(v, mk, true); handled {
		return enc, keep, err
	}
	enc, keep, err := encodeValueOf(v, false, mk)
	if err != nil || keep {
		return enc, keep, err
	}
	switch v.Kind() {
	case reflect.Struct:
		return map[string]any{}, true, nil
	case reflect.Map:
		if !v.IsNil() {
			return map[string]any{}, true, nil
		}
	case reflect.Slice:
		if !v.IsNil() {
			if v.Type().Elem().Kind() == reflect.Uint8 {
				return "", true, nil
			}
			return []any{}, true, nil
		}
	case reflect.Array:
		return []any{}, true, nil
	}
	return nil, true, nil
}

func normaliseFloat(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f)
	}
	return f
}

// encodeMarshaler handles values with their own JSON or text encoding. A zero value is not set
// unless elem is true (a list element, a map value or the target of a pointer); a value that
// encodes to null is never set.
func encodeMarshaler(v reflect.Value, mk marshalers, elem bool) (enc any, handled, keep bool, err error) {
	if !v.CanInterface() {
		return nil, false, false, nil
	}
	t := v.Type()
	var m any
	switch {
	case t.Kind() == reflect.Pointer && mk.json:
		if v.IsNil() {
			return nil, true, false, nil
		}
		m = v.Interface() // a non-nil pointer is set: maxUnavailable: 0 is meaningful
	case t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && (mk.json || mk.pointerJSON):
		if v.IsZero() && !elem {
			return nil, true, false, nil
		}
		if mk.json {
			m = v.Interface()
		} else {
			p := reflect.New(t)
			p.Elem().Set(v)
			m = p.Interface()
		}
	case t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && t.Kind() != reflect.String && mk.text:
		if v.IsZero() && !elem {
			return nil, true, false, nil
		}
		m = v.Interface()
	default:
		return nil, false, false, nil
	}
	if enc, ok := encodeKnown(m); ok {
		return enc, true, true, nil
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, true, false, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, true, false, err
	}
	out = normaliseNumbers(out)
	if out == nil {
		return nil, true, false, nil
	}
	if q, ok := out.(string); ok && (t == quantityType || t == quantityPointerType) {
		out = heldQuantity(q)
	}
	return out, true, true, nil
}

// encodeKnown encodes, without a JSON round trip, the marshalers most children hold (a Service's
// targetPort, a rollout's maxSurge, a container's resources), as the round trip would: an
// IntOrString as its number or string, a Quantity in the canonical form the API server holds.
func encodeKnown(m any) (any, bool) {
	switch x := m.(type) {
	case intstr.IntOrString:
		return intOrString(x)
	case *intstr.IntOrString:
		return intOrString(*x)
	case resource.Quantity:
		return heldQuantity(x.String()), true
	case *resource.Quantity:
		return heldQuantity(x.String()), true
	}
	return nil, false
}

// intOrString encodes x as its MarshalJSON does; false for a type it refuses.
func intOrString(x intstr.IntOrString) (any, bool) {
	switch x.Type {
	case intstr.Int:
		return int64(x.IntVal), true
	case intstr.String:
		return x.StrVal, true
	}
	return nil, false
}

var (
	quantityType        = reflect.TypeFor[resource.Quantity]()
	quantityPointerType = reflect.TypeFor[*resource.Quantity]()
)

// heldQuantity returns the form in which the API server holds the quantity s: it parses what it
// receives and serialises it canonically, so "1000m" is held as "1", "0.5Gi" as "512Mi" and even a
// canonical "5000" of a binary-format quantity as "5k". s is returned as it is when it is not a
// quantity.
func heldQuantity(s string) string {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return s
	}
	return q.String()
}

func normaliseNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return normaliseFloat(f)
	case float64:
		return normaliseFloat(v)
	case map[string]any:
		for k, e := range v {
			v[k] = normaliseNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = normaliseNumbers(e)
		}
	}
	return v
}

// encodeStruct encodes the exported fields of a struct by their json tags. keep=false when no
// field is set.
func encodeStruct(v reflect.Value) (any, bool, error) {
	out := map[string]any{}
	if err := encodeFields(v, nil, out); err != nil {
		return nil, false, err
	}
	if len(out) == 0 {
		return nil, false, nil
	}
	return out, true, nil
}

// encodeFields encodes into out the fields of struct v that guide names (with their values limited
// as liveValue limits them), or every field, whole, when guide is nil.
func encodeFields(v reflect.Value, guide map[string]any, out map[string]any) error {
	for _, f := range structFieldsOf(v.Type()) {
		fv := v.Field(f.index)
		if f.viaPointer {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		}
		if f.inline {
			if err := encodeFields(fv, guide, out); err != nil {
				return err
			}
			continue
		}
		g, wanted := guide[f.name]
		if guide != nil && !wanted {
			continue
		}
		enc, keep, err := liveValue(fv, f.omitEmpty, f.mk, g)
		if err != nil {
			return at("."+f.name, err)
		}
		if keep {
			out[f.name] = enc
		}
	}
	return nil
}

// structField is what encodeFields needs of a struct field, read from its type and JSON tag once per
// struct type (reading tags for every field of every intent was a third of Intent's time).
type structField struct {
	index int
	// name is the JSON name; omitEmpty its omitempty or omitzero option.
	name      string
	omitEmpty bool
	// inline: the field's own fields are the struct's (embedded or ",inline", a struct without its own
	// JSON encoding); viaPointer: the field is an inlined pointer, nil meaning not set.
	inline, viaPointer bool
	// mk are the marshalers of the field's type.
	mk marshalers
}

// structFieldsByType holds the encoded fields of every struct type asked about.
var structFieldsByType typeMemo[[]structField]

// structFieldsOf returns the fields of struct type t that encodeFields encodes, in order.
func structFieldsOf(t reflect.Type) []structField { return structFieldsByType.of(t, encodedFields) }

// encodedFields is structFieldsOf, worked out.
func encodedFields(t reflect.Type) []structField {
	var fs []structField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		inline := f.Anonymous && name == "" || hasOption(opts, "inline")
		if !f.IsExported() && !(f.Anonymous && inline) {
			continue
		}
		sf := structField{index: i}
		if inline {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				sf.viaPointer, ft = true, ft.Elem()
			}
			if ft.Kind() == reflect.Struct && !implementsMarshaler(ft) {
				sf.inline = true
				fs = append(fs, sf)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		sf.name, sf.omitEmpty, sf.mk = name, hasOption(opts, "omitempty") || hasOption(opts, "omitzero"), marshalersOf(f.Type)
		fs = append(fs, sf)
	}
	return fs
}

func implementsMarshaler(t reflect.Type) bool {
	mk := marshalersOf(t)
	return mk.json || mk.pointerJSON
}

// marshalers says which encoders a type has; the answers are kept per type (asking reflect each
// time was a tenth of the intent's cost).
type marshalers struct {
	// json: the type implements json.Marshaler; pointerJSON: a pointer to it does; text: the type
	// implements encoding.TextMarshaler.
	json, pointerJSON, text bool
}

// marshalersByType holds the marshalers of every type asked about.
var marshalersByType typeMemo[marshalers]

// marshalersOf returns t's marshalers.
func marshalersOf(t reflect.Type) marshalers {
	return marshalersByType.of(t, func(t reflect.Type) marshalers {
		return marshalers{
			json:        t.Implements(jsonMarshalerType),
			pointerJSON: reflect.PointerTo(t).Implements(jsonMarshalerType),
			text:        t.Implements(textMarshalerType),
		}
	})
}

func hasOption(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}
