package builders

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ConfigHashAnnotation is the pod template annotation set by RolloutOnChange.
const ConfigHashAnnotation = "convergo.dev/config-hash"

// ConfigHash returns a hex sha256 of the content of objs: for a ConfigMap its data and binaryData,
// for a Secret its data with stringData folded in (as the API server does, so a desired Secret and
// the live one hash alike), for any other object everything but metadata and status. The
// namespace and name of every object are included; labels, annotations and server metadata are
// not, so only a change of content changes the hash. The result does not depend on the order of
// objs or of map keys; typed objects and their *unstructured.Unstructured forms hash alike. Nil
// objects are skipped.
//
// The hash of a Secret reveals nothing practical about its values, but it does change whenever
// they do.
func ConfigHash(objs ...client.Object) string {
	digests := make([]string, 0, len(objs))
	for _, obj := range objs {
		if isNil(obj) {
			continue
		}
		digests = append(digests, objectDigest(obj))
	}
	slices.Sort(digests)
	h := sha256.New()
	for _, d := range digests {
		writeField(h, d)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// RolloutOnChange sets the ConfigHashAnnotation of pod to ConfigHash(objs...). Give it the
// ConfigMaps and Secrets the pod reads through environment variables or subPath mounts (which a
// running pod never sees change): when their data changes, the pod template changes and the
// Deployment or StatefulSet rolls its pods.
func RolloutOnChange(pod *corev1.PodTemplateSpec, objs ...client.Object) {
	pod.Annotations = merged(pod.Annotations, map[string]string{ConfigHashAnnotation: ConfigHash(objs...)})
}

// objectDigest hashes one object's identity and content.
func objectDigest(obj client.Object) string {
	h := sha256.New()
	writeField(h, obj.GetNamespace())
	writeField(h, obj.GetName())
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		writeMap(h, "data", o.Data)
		writeMap(h, "binaryData", o.BinaryData)
	case *corev1.Secret:
		writeMap(h, "data", secretData(o.Data, o.StringData))
	case *unstructured.Unstructured:
		digestUnstructured(h, o)
	default:
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			// Not convertible (no such object reaches here in practice): hash the Go value.
			writeField(h, fmt.Sprintf("%T %+v", obj, obj))
			break
		}
		writeOther(h, content)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func digestUnstructured(h hash.Hash, u *unstructured.Unstructured) {
	gvk := u.GroupVersionKind()
	switch {
	case gvk.Group == "" && gvk.Kind == "ConfigMap":
		data, _, _ := unstructured.NestedStringMap(u.Object, "data")
		writeMap(h, "data", data)
		writeMap(h, "binaryData", decodedBytes(u.Object, "binaryData"))
	case gvk.Group == "" && gvk.Kind == "Secret":
		stringData, _, _ := unstructured.NestedStringMap(u.Object, "stringData")
		writeMap(h, "data", secretData(decodedBytes(u.Object, "data"), stringData))
	default:
		writeOther(h, u.Object)
	}
}

// writeOther hashes the canonical JSON of content without apiVersion, kind, metadata and status.
func writeOther(h hash.Hash, content map[string]any) {
	rest := maps.Clone(content)
	for _, k := range []string{"apiVersion", "kind", "metadata", "status"} {
		delete(rest, k)
	}
	b, err := json.Marshal(rest) // map keys are sorted
	if err != nil {
		b = fmt.Appendf(nil, "%v", rest)
	}
	writeField(h, "content")
	writeField(h, string(b))
}

// secretData returns data with stringData folded in, as the API server stores a Secret.
func secretData(data map[string][]byte, stringData map[string]string) map[string][]byte {
	if len(stringData) == 0 {
		return data
	}
	out := maps.Clone(data)
	if out == nil {
		out = map[string][]byte{}
	}
	for k, v := range stringData {
		out[k] = []byte(v)
	}
	return out
}

// decodedBytes reads a map of base64 strings (a Secret's data, a ConfigMap's binaryData).
// A value that is not valid base64 is hashed as it stands.
func decodedBytes(obj map[string]any, field string) map[string][]byte {
	raw, _, _ := unstructured.NestedStringMap(obj, field)
	if raw == nil {
		return nil
	}
	out := make(map[string][]byte, len(raw))
	for k, v := range raw {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			b = []byte(v)
		}
		out[k] = b
	}
	return out
}

// writeMap hashes field and the entries of m in key order; an empty map hashes like a missing one.
func writeMap[V string | []byte](h hash.Hash, field string, m map[string]V) {
	if len(m) == 0 {
		return
	}
	writeField(h, field)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		writeField(h, k)
		writeField(h, string(m[k]))
	}
}

// writeField writes s length-prefixed, so that no two sequences of fields hash alike.
func writeField(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}
