package reconcile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// LabelAppliedIntent is a label the Applier sets with every server-side apply it sends: three digests
// of 80 bits (20 hex digits), "intent.fields.desired". intent is the start of the applied intent's
// IntentHash; fields is a digest of the fields that apply sets, as the API server records them for
// the field manager; desired is a digest of the desired object the intent came from. While the field
// manager's managedFields entry still holds exactly those fields, nobody has changed a value the
// apply set, because server-side apply moves a field to whoever changes or removes it. SlimCache then
// takes the intent's digest from this label instead of reading the applied values out of the
// object, and the Applier finds a child whose desired object is the same as at that apply unchanged
// without computing the intent (see SlimCache); any other entry is digested from its values.
//
// It is a label and not an annotation because its value changes with every new intent (a new
// replicas count): the Deployment controller copies a Deployment's annotations to its ReplicaSet,
// which would cost it a write of its own at each change, and copies no label. On a Service it is an
// annotation of the same name (see appliedIntentInAnnotation).
const LabelAppliedIntent = "convergo.dev/applied-intent"

// appliedIntentInAnnotation reports whether the Applier records the digests of LabelAppliedIntent in
// an annotation of that name on a child of kind gk instead of a label: on a Service. The EndpointSlice
// and Endpoints controllers copy a Service's labels, not its annotations, to every EndpointSlice and
// Endpoints of it, so a label would cost them a write at each new intent; and it makes their objects'
// label maps larger than the eight entries Go keeps in one group, which the controller manager's
// selector scans of a namespace, on every sync of every Service, then read more slowly (measured in
// bench/results, 2026-11-28, session 27).
func appliedIntentInAnnotation(gk schema.GroupKind) bool {
	return gk == schema.GroupKind{Kind: "Service"}
}

// appliedIntentRecord returns what obj records under LabelAppliedIntent, as a label or an annotation.
func appliedIntentRecord(obj metav1.Object) string {
	if v := obj.GetLabels()[LabelAppliedIntent]; v != "" {
		return v
	}
	return obj.GetAnnotations()[LabelAppliedIntent]
}

// recordLen is how many hex digits each digest of LabelAppliedIntent keeps (80 bits: three fit in a
// label value's 63 characters).
const recordLen = 20

// intentEncoding names the rules by which Intent turns a desired object into an intent. It is part of
// every desiredDigest: a Convergo whose rules differ must not take a digest of an earlier one's
// desired object for its own intent. Change it whenever Intent's output changes.
const intentEncoding = "convergo-intent-1"

// protoObject is a built-in API type, with the marshalling methods k8s.io/api generates (they no
// longer implement proto.Message): its protobuf encoding is deterministic (map keys sorted) and holds
// every field. It tells a nil slice or map from an empty one no more than Intent does, and a nil
// pointer from a set one as Intent does.
type protoObject interface {
	Marshal() ([]byte, error)
	MarshalToSizedBuffer([]byte) (int, error)
	Size() int
}

// desiredDigest returns a digest of obj, a prepared desired object of kind gvk, cheap to compute
// (3 µs for a Deployment in protobuf, 10 in JSON, against 100 for its intent and hash). Built-in
// types are digested in protobuf (see protoLossless), others in JSON; "" when obj cannot be encoded.
//
// Two desired objects of one digest have one intent, but for a value the API server stores alike
// whether written or not: a zero quantity in a field (divisor: "0"), the zero time and the Unix
// epoch, a nil and an empty value of a Secret's data. A desired object that only writes such a value
// where it left it unset before is applied with its next other change (FuzzIntent checks that these
// are the only cases).
func desiredDigest(obj client.Object, gvk schema.GroupVersionKind) string {
	bp := digestBuffers.Get().(*[]byte)
	defer digestBuffers.Put(bp)
	format := digestEncoding(obj)
	buf := (*bp)[:0]
	for _, s := range [...]string{intentEncoding, gvk.String(), format} {
		buf = append(append(buf, s...), 0)
	}
	buf, err := appendDesired(buf, obj, format)
	*bp = buf[:0]
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:recordLen/2])
}

// digestBuffers holds the buffers desiredDigest encodes into: one encoding per child and reconcile,
// a Deployment's a kilobyte or two, would otherwise each be a new allocation.
var digestBuffers = sync.Pool{New: func() any { return new([]byte) }}

// digestEncoding names the encoding desiredDigest gives obj: "protobuf" for a built-in type whose
// protobuf encoding holds everything its intent does (protoLossless), "json" for anything else.
func digestEncoding(obj client.Object) string {
	if _, ok := obj.(protoObject); ok && protoLossless(reflect.TypeOf(obj)) {
		return "protobuf"
	}
	return "json"
}

// appendDesired appends obj's encoding for desiredDigest to buf, in format (see digestEncoding).
func appendDesired(buf []byte, obj client.Object, format string) ([]byte, error) {
	if format != "protobuf" {
		data, err := json.Marshal(obj)
		return append(buf, data...), err
	}
	p := obj.(protoObject)
	start, size := len(buf), p.Size()
	buf = slices.Grow(buf, size)[:start+size]
	n, err := p.MarshalToSizedBuffer(buf[start:])
	if err != nil {
		return buf[:start], err
	}
	// MarshalToSizedBuffer writes the last n bytes of the slice it is given.
	return append(buf[:start], buf[len(buf)-n:]...), nil
}

// losslessTypes caches protoLossless by type.
var losslessTypes typeMemo[bool]

// protoLossless reports whether every field JSON encodes, below the object's own TypeMeta, has a
// protobuf tag. Most built-in types do; a StatefulSet does not: the TypeMeta of its
// volumeClaimTemplates is JSON only, so two StatefulSets apart only there would have one protobuf
// encoding and two intents.
func protoLossless(t reflect.Type) bool {
	return losslessTypes.of(t, func(t reflect.Type) bool {
		st := t
		for st.Kind() == reflect.Pointer {
			st = st.Elem()
		}
		return st.Kind() == reflect.Struct && structLossless(st, true, map[reflect.Type]bool{})
	})
}

// structLossless is protoLossless for a struct type; top is the object itself, whose inline TypeMeta
// the digest covers by the kind. seen breaks recursive types.
func structLossless(t reflect.Type, top bool, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return true
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Tag.Get("json") == "-" {
			continue
		}
		if top && f.Type == typeMeta {
			continue
		}
		if f.Tag.Get("protobuf") == "" {
			return false
		}
		if !typeLossless(f.Type, seen) {
			return false
		}
	}
	return true
}

// typeLossless is structLossless for the type of a field: the structs it holds, through pointers,
// slices and maps. A type with its own JSON encoding (metav1.Time, resource.Quantity) encodes
// itself alike in protobuf.
func typeLossless(t reflect.Type, seen map[reflect.Type]bool) bool {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			t = t.Elem()
			continue
		case reflect.Map:
			if !typeLossless(t.Key(), seen) {
				return false
			}
			t = t.Elem()
			continue
		case reflect.Struct:
			if mk := marshalersOf(t); mk.json || mk.pointerJSON {
				return true
			}
			return structLossless(t, false, seen)
		}
		return true
	}
}

// strippedFields are the paths the API server leaves out of every field manager's set (the
// stripMeta manager of k8s.io/apimachinery's managedfields).
var strippedFields = fieldpath.NewSet(
	fieldpath.MakePathOrDie("apiVersion"),
	fieldpath.MakePathOrDie("kind"),
	fieldpath.MakePathOrDie("metadata"),
	fieldpath.MakePathOrDie("metadata", "name"),
	fieldpath.MakePathOrDie("metadata", "namespace"),
	fieldpath.MakePathOrDie("metadata", "creationTimestamp"),
	fieldpath.MakePathOrDie("metadata", "selfLink"),
	fieldpath.MakePathOrDie("metadata", "uid"),
	fieldpath.MakePathOrDie("metadata", "clusterName"),
	fieldpath.MakePathOrDie("metadata", "generation"),
	fieldpath.MakePathOrDie("metadata", "managedFields"),
	fieldpath.MakePathOrDie("metadata", "resourceVersion"),
)

// insertLeaves inserts into set the fields of v, found at path, as a custom resource's schema makes
// them by default: every field of an object, and each list whole (atomic).
func insertLeaves(set *fieldpath.Set, path fieldpath.Path, v any) {
	m, ok := v.(map[string]any)
	if !ok {
		set.Insert(path)
		return
	}
	for k, e := range m {
		insertLeaves(set, append(path.Copy(), fieldpath.PathElement{FieldName: &k}), e)
	}
}

// fieldsDigest is the digest of a managedFields entry's fields, as the API server serialized them.
func fieldsDigest(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])[:recordLen]
}

// withAppliedIntent returns intent, of kind gvk, with the intent hash hash, from a desired object of
// desiredDigest desired, with LabelAppliedIntent set (an annotation where appliedIntentInAnnotation
// says so); intent itself is left as it is. It returns
// intent unchanged when the set of fields cannot be told (a value the kind's schema refuses) or
// desired is empty: a slim cache then digests the child's values.
func withAppliedIntent(intent map[string]any, gvk schema.GroupVersionKind, hash, desired string) map[string]any {
	if desired == "" {
		return intent
	}
	md, _ := intent["metadata"].(map[string]any)
	md = maps.Clone(md)
	if md == nil {
		md = map[string]any{}
	}
	where := "labels"
	if appliedIntentInAnnotation(gvk.GroupKind()) {
		where = "annotations"
	}
	record, _ := md[where].(map[string]any)
	record = maps.Clone(record)
	if record == nil {
		record = map[string]any{}
	}
	record[LabelAppliedIntent] = "" // its key is one of the fields applied; the value is not
	md[where] = record
	sealed := maps.Clone(intent)
	sealed["metadata"] = md
	fields, ok := appliedFieldsDigest(sealed, gvk)
	if !ok {
		return intent
	}
	record[LabelAppliedIntent] = hash[:recordLen] + "." + fields + "." + desired
	return sealed
}

// appliedFieldsDigest returns the fieldsDigest of the managedFields entry the API server records for
// an apply of body, of kind gvk: the set of body's fields less strippedFields. A built-in kind's
// fields are found by the schema client-go ships for it. Other kinds (custom resources) are read with
// the schema of object metadata for their metadata and every other list taken as atomic, as a
// custom resource definition's schema does unless it says otherwise (one that does makes a set the
// API server records otherwise, which costs only the shortcut). false when body does not fit the
// schema.
func appliedFieldsDigest(body map[string]any, gvk schema.GroupVersionKind) (string, bool) {
	raw, err := appliedFieldsJSON(body, gvk)
	if err != nil {
		return "", false
	}
	return fieldsDigest(raw), true
}

// appliedFieldsJSON returns the managedFields entry (FieldsV1) the API server records for an apply of
// body, of kind gvk (see appliedFieldsDigest).
func appliedFieldsJSON(body map[string]any, gvk schema.GroupVersionKind) ([]byte, error) {
	set, err := appliedFields(body, gvk)
	if err != nil {
		return nil, err
	}
	return set.Difference(strippedFields).ToJSON()
}

// appliedFields returns the set of fields of body, of kind gvk (see appliedFieldsDigest).
func appliedFields(body map[string]any, gvk schema.GroupVersionKind) (*fieldpath.Set, error) {
	if ks := schemaFor(gvk); ks != nil {
		// Not validated: body comes from a typed object, and a set the API server records otherwise
		// only fails the label's check (sealedDigest), which then reads the values.
		return typed.AsTypedUnvalidated(value.NewValueInterface(body), ks.s, ks.root).ToFieldSet()
	}
	set := &fieldpath.Set{}
	for k, v := range body {
		if k != "metadata" {
			insertLeaves(set, fieldpath.Path{{FieldName: &k}}, v)
		}
	}
	md, ok := body["metadata"]
	if !ok {
		return set, nil
	}
	// Any built-in kind reads metadata with the schema of ObjectMeta (owner references keyed by uid).
	meta, err := builtinTypes().ObjectToTyped(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}})
	if err != nil {
		return nil, err
	}
	metaSet, err := meta.ToFieldSet()
	if err != nil {
		return nil, err
	}
	return set.Union(metaSet), nil
}

// sealedDigest returns the intent digest and the desired object's digest LabelAppliedIntent records
// for a field manager's entry mf of obj, when mf still holds exactly the fields of that apply; false
// otherwise (another apply, a field taken or removed since, no label).
func sealedDigest(obj metav1.Object, mf metav1.ManagedFieldsEntry) (intent, desired string, ok bool) {
	parts := strings.Split(appliedIntentRecord(obj), ".")
	if len(parts) != 3 || mf.FieldsV1 == nil {
		return "", "", false
	}
	for _, p := range parts {
		if len(p) != recordLen {
			return "", "", false
		}
	}
	if fieldsDigest(mf.FieldsV1.Raw) != parts[1] {
		return "", "", false
	}
	return parts[0], parts[2], true
}

// digestMatches reports whether digest, a digest of at least recordLen hex digits, is the start of the
// intent hash hash.
func digestMatches(digest, hash string) bool {
	return len(digest) >= recordLen && len(digest) <= len(hash) && hash[:len(digest)] == digest
}
