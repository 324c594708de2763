package intent

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// HashAnnotation holds the first 20 hex digits (80 bits) of the sha256 of the applied intent's
// shape (see Of): every key it sets and every list with its items, but not the values of the
// scalars outside lists. A field removed from the desired object changes it, so Apply sends the
// intent again and server-side apply removes the field from the live object; a new replicas count or
// strategy leaves it as it was, so such a change writes no new annotation on the child (a
// Deployment's annotations are copied to its ReplicaSet, which costs the Deployment controller a
// write of its own each time one changes). New values are found by comparing the values themselves.
const HashAnnotation = "convergo.dev/intent-hash"

// keptMetadata are the metadata fields that belong to an intent. Everything else under metadata
// (uid, resourceVersion, creationTimestamp, managedFields, generation...) is server state.
var keptMetadata = []string{"name", "namespace", "labels", "annotations", "ownerReferences", "finalizers"}

// Of returns the intent of obj: the fields it sets, as the JSON-shaped map that server-side apply sends:
//
//   - nil pointers, slices and maps are left out, and so are empty slices and maps;
//   - zero scalars are left out when their json tag says omitempty;
//   - a struct held by value that ends up empty is left out (resources: {}, status: {}), while a
//     pointer to an empty struct is kept (emptyDir: {} means something);
//   - values with their own JSON encoding (metav1.Time, resource.Quantity, intstr.IntOrString,
//     runtime.RawExtension...) use it, and are left out when zero, so creationTimestamp: null is
//     never sent; quantities take the canonical form the API server stores ("1000m" becomes "1");
//   - embedded and ",inline" structs are flattened;
//   - the top-level status is dropped, and metadata keeps only name, namespace, labels,
//     annotations, ownerReferences and finalizers;
//   - apiVersion and kind come from the scheme;
//   - a Secret's stringData is folded into data (the API server never returns stringData).
//
// Numbers are int64 or float64, so the result is valid unstructured content. The intent-hash
// annotation, if present, is removed.
func Of(obj runtime.Object, scheme *runtime.Scheme) (map[string]any, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return nil, fmt.Errorf("intent of %T: %w", obj, err)
	}
	var content map[string]any
	if u, ok := obj.(runtime.Unstructured); ok {
		// A JSON round trip normalises what users put in unstructured content (int, int32...).
		data, err := json.Marshal(u.UnstructuredContent())
		if err != nil {
			return nil, fmt.Errorf("intent of %s: %w", gvk.Kind, err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&content); err != nil {
			return nil, fmt.Errorf("intent of %s: %w", gvk.Kind, err)
		}
		normaliseNumbers(content)
	} else {
		v := reflect.ValueOf(obj)
		if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
			return nil, fmt.Errorf("intent of %T: want a pointer to a struct", obj)
		}
		enc, keep, err := encodeStruct(v.Elem())
		if err != nil {
			return nil, fmt.Errorf("intent of %s: %w", gvk.Kind, err)
		}
		content = map[string]any{}
		if keep {
			content = enc.(map[string]any)
		}
	}
	if content == nil {
		content = map[string]any{}
	}
	delete(content, "status")
	content["apiVersion"] = gvk.GroupVersion().String()
	content["kind"] = gvk.Kind
	content["metadata"] = reduceMetadata(content["metadata"])
	if gvk.Group == "" && gvk.Kind == "Secret" {
		foldStringData(content)
	}
	return content, nil
}

// Hash returns the hex sha256 of the canonical JSON of intent, ignoring HashAnnotation itself.
// encoding/json sorts map keys, which makes the encoding canonical.
func Hash(intent map[string]any) (string, error) {
	data, err := json.Marshal(hashedIntent(intent))
	if err != nil {
		return "", fmt.Errorf("hash intent: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// shapeLen is how many hex digits of its sha256 HashAnnotation keeps (80 bits: a Deployment's
// annotations are copied to each of its ReplicaSets, so each byte is stored more than once).
const shapeLen = 20

// shapeHash returns the value of HashAnnotation for intent (see Of): the first shapeLen hex digits
// of the sha256 of its shape: intent with every scalar that is not inside a list replaced by the same
// placeholder, without the annotation itself (as Hash). Map keys and lists, items and all, stay:
// the drift check (isSubset) cannot see that the intent dropped a key, a list item or a field of a
// list item, which the live object still holds, so those must change the hash; a new value of a
// scalar outside lists it sees itself.
func shapeHash(intent map[string]any) (string, error) {
	h, err := Hash(shapeOf(hashedIntent(intent)).(map[string]any))
	if err != nil {
		return "", err
	}
	return h[:shapeLen], nil
}

// shapeOf returns v with every scalar outside lists replaced by true.
func shapeOf(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = shapeOf(e)
		}
		return out
	case []any:
		return v
	}
	return true
}

// hashedIntent returns intent without HashAnnotation. Only the maps on the way to it are copied: the
// rest is shared with intent, which is left as it is.
func hashedIntent(intent map[string]any) map[string]any {
	anns, _ := nestedMap(intent, "metadata", "annotations")
	if _, ok := anns[HashAnnotation]; !ok {
		return intent
	}
	md := maps.Clone(intent["metadata"].(map[string]any))
	md["annotations"] = without(anns, func(k string) bool { return k == HashAnnotation })
	if len(md["annotations"].(map[string]any)) == 0 {
		delete(md, "annotations")
	}
	c := maps.Clone(intent)
	c["metadata"] = md
	return c
}

// without returns a copy of m without the keys drop matches.
func without(m map[string]any, drop func(string) bool) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if !drop(k) {
			out[k] = v
		}
	}
	return out
}

func reduceMetadata(m any) map[string]any {
	out := map[string]any{}
	meta, _ := m.(map[string]any)
	for _, k := range keptMetadata {
		if v, ok := meta[k]; ok && !isEmptyJSON(v) {
			out[k] = v
		}
	}
	if anns, ok := out["annotations"].(map[string]any); ok {
		delete(anns, HashAnnotation)
		if len(anns) == 0 {
			delete(out, "annotations")
		}
	}
	return out
}

func isEmptyJSON(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	case string:
		return v == ""
	}
	return false
}

// foldStringData moves a Secret's stringData into data, base64-encoded, as the API server does.
func foldStringData(content map[string]any) {
	sd, ok := content["stringData"].(map[string]any)
	delete(content, "stringData")
	if !ok || len(sd) == 0 {
		return
	}
	data, _ := content["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range sd {
		s, _ := v.(string)
		data[k] = base64.StdEncoding.EncodeToString([]byte(s))
	}
	content["data"] = data
}

func nestedMap(m map[string]any, path ...string) (map[string]any, bool) {
	cur := m
	for _, p := range path {
		next, ok := cur[p].(map[string]any)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

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

// isSubset reports whether every field set in intent holds the same value in live, for an object
// without schema: maps key by key, lists as an ordered subsequence (elements added by other managers
// or by defaulting are allowed), numbers numerically and strings as written. It returns the path of
// the first difference. See isSubsetWith for objects whose kind has a schema.
//
// The intent of a typed object holds its quantities in the form the API server stores (see
// heldQuantity), so they compare as written too. The intent of an unstructured object does not say
// which strings are quantities: with quantities set, an intent string also matches its held form
// as a quantity ("1000m" matches "1"), but "1.1" does not match "1.10", nor "1024Mi" "1Gi".
func isSubset(intent, live any, quantities bool) (bool, string) {
	return isSubsetWith(intent, live, quantities, nil)
}

// isSubsetWith is isSubset following the merge semantics the kind's schema gives each list, as
// server-side apply does:
//
//   - atomic lists (a container's args and command, a ClusterRole's rules and their verbs,
//     tolerations): server-side apply replaces them whole, so the live list must hold exactly the
//     intent's elements, in order (each element compared as a subset, so fields the server defaults
//     inside an element are no drift); an element someone added is drift and is reverted;
//   - sets (listType=set): every intent element is present, in any order; others may be added;
//   - maps (listType=map, e.g. containers and env by name, ports by port and protocol): every intent
//     element is matched by its key fields, in any order; elements others added (an injected
//     sidecar, a foreign env var) are no drift;
//   - maps of free keys that are atomic (a Service's selector): no key beyond the intent's.
//
// Lists of kinds without a schema (custom resources) keep the ordered-subsequence rule: additions by
// others are never reverted there. ks nil means no schema.
func isSubsetWith(intent, live any, quantities bool, ks *kindSchema) (bool, string) {
	ok, path := comparison{quantities: quantities}.subset(intent, live, ks.rootType())
	if !ok {
		return false, pathOr(path)
	}
	return true, ""
}

// comparison is one isSubset run.
type comparison struct {
	quantities bool
}

// subset reports whether intent holds in live and, when not, the path of the first difference relative
// to them ("" for the values themselves). Paths are built on the way back, only for a difference: a
// comparison that holds builds none.
func (c comparison) subset(intent, live any, t typeAt) (bool, string) {
	switch iv := intent.(type) {
	case map[string]any:
		lv, ok := live.(map[string]any)
		if !ok {
			return false, ""
		}
		for k, e := range iv {
			l, found := lv[k]
			if !found {
				if e == nil {
					continue
				}
				return false, "." + k
			}
			if ok, p := c.subset(e, l, t.field(k)); !ok {
				return false, "." + k + p
			}
		}
		if t.atomicMap() {
			for k := range lv {
				if _, declared := iv[k]; !declared {
					return false, "." + k
				}
			}
		}
		return true, ""
	case []any:
		lv, ok := live.([]any)
		if !ok {
			return false, ""
		}
		return c.list(iv, lv, t)
	case nil:
		if live == nil {
			return true, ""
		}
		return false, ""
	}
	if c.scalarEqual(intent, live) {
		return true, ""
	}
	return false, ""
}

// index is the path segment of list element i.
func index(i int) string { return "[" + strconv.Itoa(i) + "]" }

// list compares a list by its merge semantics (see isSubsetWith); the path is relative, as subset's.
func (c comparison) list(iv, lv []any, t typeAt) (bool, string) {
	kind, keys, elem := t.list()
	switch kind {
	case listAtomic:
		for i, e := range iv {
			if i >= len(lv) {
				return false, index(i)
			}
			if ok, p := c.subset(e, lv[i], elem); !ok {
				return false, index(i) + p
			}
		}
		if len(lv) > len(iv) {
			return false, index(len(iv))
		}
		return true, ""
	case listSet, listMap:
		for i, e := range iv {
			if !c.anyMatches(e, lv, keys, elem) {
				return false, index(i)
			}
		}
		return true, ""
	}
	j := 0
	for i, e := range iv {
		matched := false
		for j < len(lv) {
			ok, _ := c.subset(e, lv[j], elem)
			j++
			if ok {
				matched = true
				break
			}
		}
		if !matched {
			return false, index(i)
		}
	}
	return true, ""
}

// anyMatches reports whether some live element holds the intent element e: for a map list, the one
// with e's key values (the key fields e sets; a key the server defaults, such as a port's protocol,
// may be left out) must hold e as a subset; for a set, one must equal it.
func (c comparison) anyMatches(e any, lv []any, keys []string, elem typeAt) bool {
	em, _ := e.(map[string]any)
	for _, l := range lv {
		if len(keys) > 0 && em != nil {
			lm, ok := l.(map[string]any)
			if !ok || !c.sameKeys(em, lm, keys) {
				continue
			}
		}
		if ok, _ := c.subset(e, l, elem); ok {
			return true
		}
	}
	return false
}

// sameKeys reports whether live element l has the key values intent element e sets.
func (c comparison) sameKeys(e, l map[string]any, keys []string) bool {
	for _, k := range keys {
		ev, set := e[k]
		if !set {
			continue
		}
		if lvk, found := l[k]; !found || !c.scalarEqual(ev, lvk) {
			return false
		}
	}
	return true
}

func pathOr(p string) string {
	if p == "" {
		return "."
	}
	return p
}

func (c comparison) scalarEqual(a, b any) bool {
	if af, ok := toFloat(a); ok {
		bf, ok := toFloat(b)
		if !ok {
			return false
		}
		if ai, ok := toInt(a); ok {
			if bi, ok := toInt(b); ok {
				return ai == bi
			}
		}
		return af == bf
	}
	switch a := a.(type) {
	case string:
		b, ok := b.(string)
		if !ok {
			return false
		}
		return a == b || c.quantities && heldQuantity(a) == b
	case bool:
		b, ok := b.(bool)
		return ok && a == b
	}
	return reflect.DeepEqual(a, b)
}

func toInt(v any) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case int32:
		return int64(v), true
	case json.Number:
		i, err := v.Int64()
		return i, err == nil
	}
	return 0, false
}

func toFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	case int32:
		return float64(v), true
	case float64:
		return v, true
	case float32:
		return float64(v), true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}

// Stamp sets HashAnnotation, the hash of intent's shape, on intent.
func Stamp(intent map[string]any) error {
	h, err := shapeHash(intent)
	if err != nil {
		return err
	}
	md, _ := intent["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		intent["metadata"] = md
	}
	anns, _ := md["annotations"].(map[string]any)
	if anns == nil {
		anns = map[string]any{}
		md["annotations"] = anns
	}
	anns[HashAnnotation] = h
	return nil
}

// Holds reports whether live holds intent (stamped, see Stamp), an intent of kind gvk: every field it
// sets, each list compared by its merge semantics from the kind's schema (see isSubsetWith), and
// HashAnnotation; path names the first difference. fromUnstructured says the intent came from an
// unstructured object, whose strings may be quantities.
func Holds(intent map[string]any, live client.Object, gvk schema.GroupVersionKind, fromUnstructured bool) (same bool, path string, err error) {
	content, err := liveContent(live, intent)
	if err != nil {
		return false, "", err
	}
	// Typed objects read from a cache carry no apiVersion/kind; we read by that very kind.
	content["apiVersion"], content["kind"] = intent["apiVersion"], intent["kind"]
	same, path = isSubsetWith(intent, content, fromUnstructured, schemaFor(gvk))
	return same, path, nil
}

// pathError is an encoding error with the path of the field it is about, built on the way back up
// (".spec.template.spec.containers[0].resources"), so that encoding what succeeds builds no path.
type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return e.path + ": " + e.err.Error() }

func (e *pathError) Unwrap() error { return e.err }

// at returns err with seg in front of its path.
func at(seg string, err error) error {
	var pe *pathError
	if errors.As(err, &pe) {
		return &pathError{path: seg + pe.path, err: pe.err}
	}
	return &pathError{path: seg, err: err}
}
