package intent

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
