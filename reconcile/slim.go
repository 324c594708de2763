package reconcile

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// AnnotationApplied is found only on the cached copies of children that SlimCache keeps, never on the
// API server: for each server-side apply field manager of the child, a digest of the values the child
// holds in the fields that manager applied ("manager=digest", comma-separated). The Applier compares
// its own manager's digest with its intent hash instead of the fields SlimCache dropped.
const AnnotationApplied = "convergo.dev/applied"

// digestLen is how many hex digits of an intent hash a digest keeps (128 bits).
const digestLen = 32

// SlimCache is LeanCache, and the cached copy of each child keeps only what reading it needs:
//
//   - its metadata (without managedFields, the intent hash, which the digest covers, and the node
//     annotations, which only kubectl convergo reads, from the API server) and its status;
//   - of everything else (the spec, a ConfigMap's data, a Role's rules...), only the scalar fields (a
//     Deployment's replicas, a Service's type and clusterIP, a Job's completions) and the lists of flat
//     records (a Service's ports): every other list and every map is dropped, so are pod templates;
//   - AnnotationApplied: per server-side apply field manager, a digest of the values the child holds
//     in the fields that manager owns, as the API server's managedFields record them.
//
// The Applier's drift check then compares that digest with its intent hash: equal, the child holds
// the intent (no request); different (the intent changed, or someone changed a field the controller
// applied, whose ownership then moved to them), the child is applied, in one request and without a
// read. When the answer to that write holds another value than the intent (an admission webhook
// pinned an image to its digest), its digest is remembered as holding the intent, so the next
// reconcile does not write again.
// Fields others added (an injected sidecar, an autoscaler's replicas) change no digest and wake nothing.
// The digest comes from the object itself, so a restarted controller finds its converged children
// unchanged without a request. A child the Applier wrote carries LabelAppliedIntent: while the
// field manager's entry holds exactly the fields of that apply, the digest is taken from it without
// reading a value, and the Applier finds a child whose desired object is the same as then unchanged
// without computing its intent.
//
// What a cached child no longer holds is the price: a ReadyWhen check or a Status hook that reads a
// dropped list or map of a child (a pod template, a ConfigMap's data, a Service's selector) sees it
// empty on a cached copy (it is there on the answer to a write). The readiness checks of package builders read only scalar
// fields and the status. Never update a child read from this cache: it would write back what was
// dropped; apply it. A child kind not in this list keeps whole copies (LeanCache).
//
//	opts := ctrl.Options{Scheme: scheme}
//	reconcile.SlimCache(&opts.Cache, &appsv1.Deployment{}, &corev1.Service{}, &corev1.ConfigMap{})
func SlimCache(opts *cache.Options, children ...client.Object) {
	LeanCache(opts, children...)
	for _, child := range children {
		key, entry := byObjectEntry(opts.ByObject, child)
		next := entry.Transform
		if next == nil {
			next = opts.DefaultTransform
		}
		entry.Transform = slimTransform(childGVK(child), next)
		opts.ByObject[key] = entry
	}
}

// childGVK returns the kind of child: its own, or client-go's for built-in types; empty when unknown
// (the digests of such a kind then use a deduced schema: every list atomic).
func childGVK(child client.Object) schema.GroupVersionKind {
	if gvk := child.GetObjectKind().GroupVersionKind(); gvk.Kind != "" {
		return gvk
	}
	if gvks, _, err := clientgoscheme.Scheme.ObjectKinds(child); err == nil && len(gvks) > 0 {
		return gvks[0]
	}
	return schema.GroupVersionKind{}
}

// slimTransform returns the cache transform of one child kind: slim, then next.
func slimTransform(gvk schema.GroupVersionKind, next toolscache.TransformFunc) toolscache.TransformFunc {
	return func(in any) (any, error) {
		if _, ok := in.(managedFieldsProbe); ok {
			return nil, nil // slim reads managedFields: they must be decoded (see NewCache)
		}
		if obj, ok := in.(client.Object); ok {
			slim(obj, gvk)
		}
		if next == nil {
			return in, nil
		}
		return next(in)
	}
}

// slim turns obj, in place, into the copy SlimCache keeps. An object slimmed already is left as it is,
// and so is one whose managedFields cannot be read (it stays whole).
func slim(obj client.Object, gvk schema.GroupVersionKind) {
	anns := obj.GetAnnotations()
	if _, done := anns[AnnotationApplied]; done {
		return
	}
	digests, err := appliedDigests(obj, gvk)
	if err != nil {
		// Kept whole: the Applier then judges it field by field. An error from a transform would make
		// the informer drop the watch and list again, over and over.
		return
	}
	if anns == nil {
		anns = map[string]string{}
	}
	delete(anns, AnnotationNode)
	delete(anns, AnnotationDependsOn)
	delete(anns, AnnotationIntentHash) // the digest covers it
	delete(anns, LabelAppliedIntent)   // so does the record, as an annotation
	anns[AnnotationApplied] = digests
	obj.SetAnnotations(anns)
	if labels := obj.GetLabels(); labels[LabelAppliedIntent] != "" {
		delete(labels, LabelAppliedIntent) // so does this
		obj.SetLabels(labels)
	}
	obj.SetManagedFields(nil)
	if u, ok := obj.(*unstructured.Unstructured); ok {
		for k, v := range u.Object {
			if !skippedFields[k] {
				u.Object[k] = dropLists(v)
			}
		}
		return
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return
	}
	v = v.Elem()
	for _, i := range contentFields(v.Type()) {
		keepScalars(v.Field(i))
	}
}

// keepScalars zeroes every list and map in v but lists of flat records, and every pointer to a
// struct left empty by that.
func keepScalars(v reflect.Value) {
	switch v.Kind() {
	case reflect.Slice:
		if !flat(v.Type().Elem()) {
			v.SetZero()
		}
	case reflect.Map, reflect.Interface:
		v.SetZero()
	case reflect.Struct:
		for _, i := range exportedFields(v.Type()) {
			keepScalars(v.Field(i))
		}
	case reflect.Pointer:
		if v.IsNil() || v.Elem().Kind() != reflect.Struct {
			return
		}
		keepScalars(v.Elem())
		if v.Elem().IsZero() {
			v.SetZero()
		}
	}
}

// flatList reports whether every element of l is a map of scalars.
func flatList(l []any) bool {
	for _, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			return false
		}
		for _, v := range m {
			switch v.(type) {
			case []any, map[string]any:
				return false
			}
		}
	}
	return true
}

// dropLists is keepScalars for unstructured content: lists go but lists of flat records, maps keep
// their scalars.
func dropLists(v any) any {
	switch v := v.(type) {
	case []any:
		if len(v) > 0 && flatList(v) {
			return v
		}
		return nil
	case map[string]any:
		for k, e := range v {
			if e = dropLists(e); e == nil {
				delete(v, k)
			} else {
				v[k] = e
			}
		}
		if len(v) == 0 {
			return nil
		}
	}
	return v
}

// appliedDigests returns the AnnotationApplied value of obj: for each field manager that server-side
// applied obj (in gvk's version), the digest of the values obj holds in the fields it owns. For the
// entry that still holds exactly the fields of the Applier's last apply, that is the digest of the
// intent LabelAppliedIntent records (see sealedDigest), which the values would give: nobody
// changed them, or the field would no longer be in the entry.
func appliedDigests(obj client.Object, gvk schema.GroupVersionKind) (string, error) {
	var tv *typed.TypedValue
	var out []string
	for _, mf := range obj.GetManagedFields() {
		if mf.Operation != metav1.ManagedFieldsOperationApply || mf.Subresource != "" || mf.FieldsV1 == nil {
			continue
		}
		if gvk.Kind != "" && mf.APIVersion != gvk.GroupVersion().String() {
			continue // recorded in another version: its paths may not be this version's
		}
		if digest, desired, ok := sealedDigest(obj, mf); ok {
			out = append(out, mf.Manager+"="+digest+"."+desired)
			continue
		}
		if tv == nil {
			var err error
			if tv, err = typedOf(obj, gvk); err != nil {
				return "", err
			}
		}
		fields := &fieldpath.Set{}
		if err := fields.FromJSON(bytes.NewReader(mf.FieldsV1.Raw)); err != nil {
			return "", fmt.Errorf("managed fields of %s: %w", mf.Manager, err)
		}
		applied, ok := extractItems(tv, fields.Leaves()).(map[string]any)
		if !ok {
			continue
		}
		digest, err := extractedDigest(applied, obj, gvk)
		if err != nil {
			return "", err
		}
		out = append(out, mf.Manager+"="+digest)
	}
	return strings.Join(out, ","), nil
}

// typedOf returns obj as a typed value of its schema: client-go's for built-in kinds, else deduced.
// A typed built-in object is read in place by reflection, and not validated: the API server sent it.
func typedOf(obj client.Object, gvk schema.GroupVersionKind) (*typed.TypedValue, error) {
	_, isUnstructured := obj.(*unstructured.Unstructured)
	if ks := schemaFor(gvk); gvk.Kind != "" && ks != nil && !isUnstructured {
		v, err := value.NewValueReflect(obj)
		if err != nil {
			return nil, err
		}
		return typed.AsTypedUnvalidated(v, ks.s, ks.root), nil
	}
	content, err := liveContent(obj)
	if err != nil {
		return nil, err
	}
	return typed.DeducedParseableType.FromUnstructured(content)
}

// extractedDigest is the intent hash, cut to digestLen, of what a field manager applied to obj:
// applied with obj's identity, shaped as Intent shapes an intent.
func extractedDigest(applied map[string]any, obj client.Object, gvk schema.GroupVersionKind) (string, error) {
	md, _ := applied["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
	}
	md["name"] = obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		md["namespace"] = ns
	}
	applied["metadata"] = reduceMetadata(md)
	delete(applied, "status")
	if gvk.Kind != "" {
		applied["apiVersion"], applied["kind"] = gvk.GroupVersion().String(), gvk.Kind
	}
	hash, err := IntentHash(applied)
	if err != nil {
		return "", err
	}
	return hash[:digestLen], nil
}

// appliedDigest returns the digest of manager on a copy SlimCache keeps, and the digest of the desired
// object of the Applier's apply it comes from when LabelAppliedIntent vouched for it (else
// empty); slimmed is false for any other object (a whole one, from the API server or a LeanCache).
func appliedDigest(obj client.Object, manager string) (digest, desired string, slimmed bool) {
	v, slimmed := obj.GetAnnotations()[AnnotationApplied]
	if !slimmed {
		return "", "", false
	}
	digest, desired = managerDigest(v, manager)
	return digest, desired, true
}

// managerDigest returns manager's digest in digests, an AnnotationApplied value, and the digest of the
// desired object that follows it after a dot, if any; empty when it has none.
func managerDigest(digests, manager string) (digest, desired string) {
	for entry := range strings.SplitSeq(digests, ",") {
		if m, d, ok := strings.Cut(entry, "="); ok && m == manager {
			digest, desired, _ = strings.Cut(d, ".")
			return digest, desired
		}
	}
	return "", ""
}

// digestOf returns the digest of what manager applied to obj, a whole object with its managedFields
// (the answer to a write); empty when it cannot tell.
func digestOf(obj client.Object, gvk schema.GroupVersionKind, manager string) string {
	digests, err := appliedDigests(obj, gvk)
	if err != nil {
		return ""
	}
	digest, _ := managerDigest(digests, manager)
	return digest
}
