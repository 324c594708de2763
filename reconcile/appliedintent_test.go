package reconcile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// TestAppliedFieldsJSON: the fields the Applier expects the API server to record for an apply are
// those the API server records (the wants are copied from managedFields entries of kube-apiserver
// 1.37; TestIntegrationAppliedIntent checks more kinds on the real server).
func TestAppliedFieldsJSON(t *testing.T) {
	owner := []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u1", "controller": true}}
	cases := map[string]struct {
		gvk  schema.GroupVersionKind
		body map[string]any
		want string
	}{
		"built-in kind": {
			gvk: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
			body: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
				"name": "page", "namespace": "ns", "labels": map[string]any{"app": "web"}, "ownerReferences": owner,
			}, "data": map[string]any{"index.html": "hi"}},
			want: `{"f:data":{"f:index.html":{}},"f:metadata":{"f:labels":{"f:app":{}},"f:ownerReferences":{"k:{\"uid\":\"u1\"}":{}}}}`,
		},
		"custom resource": {
			gvk: schema.GroupVersionKind{Group: "test.convergo.dev", Version: "v1alpha1", Kind: "Widget"},
			body: map[string]any{"apiVersion": "test.convergo.dev/v1alpha1", "kind": "Widget", "metadata": map[string]any{
				"name": "child", "namespace": "ns", "annotations": map[string]any{"a": "b"}, "ownerReferences": owner,
			}, "spec": map[string]any{"data": map[string]any{"k": "v"}, "args": []any{"x"}}},
			want: `{"f:metadata":{"f:annotations":{"f:a":{}},"f:ownerReferences":{"k:{\"uid\":\"u1\"}":{}}},"f:spec":{"f:args":{},"f:data":{"f:k":{}}}}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			raw, err := appliedFieldsJSON(tc.body, tc.gvk)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(raw)); diff != "" {
				t.Error(diff)
			}
		})
	}
}

// TestSealedDigest: while our field manager's entry holds exactly the fields of the apply that wrote
// LabelAppliedIntent, the digest is the intent's, whatever the values (a webhook may have
// pinned one on our own apply); once a field left the entry, or the label is not ours, the
// digest comes from the values.
func TestSealedDigest(t *testing.T) {
	cases := map[string]struct {
		// change is what happened on the server after the apply.
		change     func(t *testing.T, obj client.Object)
		wantSealed bool
		wantIntent bool // the digest is the intent hash
	}{
		"as applied": {wantSealed: true, wantIntent: true},
		"an image pinned by a webhook on our apply": {wantSealed: true, wantIntent: true, change: func(_ *testing.T, obj client.Object) {
			obj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Image = "web@sha256:0123"
		}},
		"an image changed by someone else": {change: func(t *testing.T, obj client.Object) {
			obj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Image = "theirs:1"
			dropOwned(t, obj, fieldpath.MakePathOrDie("spec", "template", "spec", "containers",
				fieldpath.KeyByFields("name", "web"), "image"))
		}},
		"the label changed by someone else": {change: func(t *testing.T, obj client.Object) {
			labels := obj.GetLabels()
			labels[LabelAppliedIntent] = "theirs"
			obj.SetLabels(labels)
			dropOwned(t, obj, fieldpath.MakePathOrDie("metadata", "labels", LabelAppliedIntent))
		}, wantIntent: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			live, hash := sealedBy(t, "convergo", slimDeployment())
			if tc.change != nil {
				tc.change(t, live)
			}
			sealed, _, ok := sealedDigest(live, live.GetManagedFields()[0])
			digest := digestOf(live, appsv1.SchemeGroupVersion.WithKind("Deployment"), "convergo")
			want := [3]any{tc.wantSealed, tc.wantIntent, tc.wantSealed}
			if diff := cmp.Diff(want, [3]any{ok, digestMatches(digest, hash), sealed == digest}); diff != "" {
				t.Errorf("sealed, digest is the intent's, digest is the sealed one (-want +got):\n%s", diff)
			}
		})
	}
}

// dropOwned removes path from the fields of obj's first managedFields entry, as the API server does
// when another field manager takes it.
func dropOwned(t *testing.T, obj client.Object, path fieldpath.Path) {
	t.Helper()
	mfs := obj.GetManagedFields()
	set := &fieldpath.Set{}
	if err := set.FromJSON(bytes.NewReader(mfs[0].FieldsV1.Raw)); err != nil {
		t.Fatal(err)
	}
	if !set.Has(path) {
		t.Fatalf("%s is not in the entry", path)
	}
	raw, err := set.Difference(fieldpath.NewSet(path)).ToJSON()
	if err != nil {
		t.Fatal(err)
	}
	mfs[0].FieldsV1 = &metav1.FieldsV1{Raw: raw}
	obj.SetManagedFields(mfs)
}

// TestDesiredDigest: equal desired objects have equal digests, whatever the order their maps are
// iterated in; any field of the object changes it, typed (protobuf) or not (JSON).
func TestDesiredDigest(t *testing.T) {
	gvk := appsv1.SchemeGroupVersion.WithKind("Deployment")
	base := desiredDigest(slimDeployment(), gvk)
	asUnstructured := func(d *appsv1.Deployment) client.Object {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: m}
	}
	cases := map[string]struct {
		obj  client.Object
		gvk  schema.GroupVersionKind
		same bool
	}{
		"the same object": {obj: slimDeployment(), gvk: gvk, same: true},
		"another image": {gvk: gvk, obj: func() client.Object {
			d := slimDeployment()
			d.Spec.Template.Spec.Containers[0].Image = "web:2"
			return d
		}()},
		"replicas set to zero": {gvk: gvk, obj: func() client.Object {
			d := slimDeployment()
			d.Spec.Replicas = ptr.To[int32](0)
			return d
		}()},
		"another owner": {gvk: gvk, obj: func() client.Object {
			d := slimDeployment()
			d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "o", UID: "u2"}}
			return d
		}()},
		"another kind": {gvk: appsv1.SchemeGroupVersion.WithKind("StatefulSet"), obj: slimDeployment()},
		"unstructured": {gvk: gvk, obj: asUnstructured(slimDeployment())},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := desiredDigest(tc.obj, tc.gvk)
			if len(got) != recordLen {
				t.Fatalf("digest %q", got)
			}
			if diff := cmp.Diff(tc.same, got == base); diff != "" {
				t.Errorf("same digest as the base object (-want +got):\n%s", diff)
			}
		})
	}
	// Built-in types are encoded in protobuf (a tenth of JSON's cost), everything else in JSON.
	formats := map[string]struct {
		obj  client.Object
		want string
	}{
		"Deployment":   {obj: slimDeployment(), want: "protobuf"},
		"Service":      {obj: &corev1.Service{}, want: "protobuf"},
		"ConfigMap":    {obj: &corev1.ConfigMap{}, want: "protobuf"},
		"ClusterRole":  {obj: &rbacv1.ClusterRole{}, want: "protobuf"},
		"StatefulSet":  {obj: &appsv1.StatefulSet{}, want: "json"}, // volumeClaimTemplates' TypeMeta
		"unstructured": {obj: asUnstructured(slimDeployment()), want: "json"},
	}
	for name, tc := range formats {
		if diff := cmp.Diff(tc.want, digestEncoding(tc.obj)); diff != "" {
			t.Errorf("%s: encoding (-want +got):\n%s", name, diff)
		}
	}
	// Maps are iterated in a random order: the encodings sort their keys.
	many := slimDeployment()
	for i := range 50 {
		many.Labels[fmt.Sprintf("key-%d", i)] = "v"
	}
	for _, obj := range []client.Object{many, asUnstructured(many)} {
		want := desiredDigest(obj, gvk)
		for range 20 {
			if got := desiredDigest(obj.DeepCopyObject().(client.Object), gvk); got != want {
				t.Fatalf("%T with 51 labels: digest %s, then %s", obj, want, got)
			}
		}
	}
}

// TestApplierTrustsTheDesiredDigest: a slim copy our last apply vouches for, of the very desired
// object being applied, holds it without the intent being computed; another desired object, or a copy
// whose fields someone took, is judged from the intent.
func TestApplierTrustsTheDesiredDigest(t *testing.T) {
	gvk := appsv1.SchemeGroupVersion.WithKind("Deployment")
	cases := map[string]struct {
		desired    func(*appsv1.Deployment)
		taken      bool
		want       bool
		wantIntent bool // the intent was computed
	}{
		"the same desired object":    {want: true},
		"new replicas":               {desired: func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) }, wantIntent: true},
		"an image someone else took": {taken: true, wantIntent: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := NewApplier(fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build(), clientgoscheme.Scheme)
			owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "ns", UID: "owner-uid"}}
			first, err := a.newCall(owner, slimDeployment())
			if err != nil {
				t.Fatal(err)
			}
			live, _ := sealedBy(t, a.FieldManager(), first.obj)
			if tc.taken {
				live.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Image = "theirs:1"
				dropOwned(t, live, fieldpath.MakePathOrDie("spec", "template", "spec", "containers",
					fieldpath.KeyByFields("name", "web"), "image"))
			}
			slim(live, gvk)
			desired := slimDeployment()
			if tc.desired != nil {
				tc.desired(desired)
			}
			c, err := a.newCall(owner, desired)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := a.holds(c, live)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([2]bool{tc.want, tc.wantIntent}, [2]bool{got, c.intent != nil}); diff != "" {
				t.Errorf("holds, intent computed (-want +got):\n%s", diff)
			}
		})
	}
}

// BenchmarkHoldsSlim is the drift check of one converged Deployment read from a slim cache: a copy
// the Applier's last apply vouches for (no intent computed), and one digested from its values (the
// intent and its hash computed and compared).
func BenchmarkHoldsSlim(b *testing.B) {
	t := &testing.T{}
	gvk := appsv1.SchemeGroupVersion.WithKind("Deployment")
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(gvk, meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	a := NewApplier(fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithRESTMapper(mapper).Build(), clientgoscheme.Scheme)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "ns", UID: "owner-uid"}}
	c, err := a.newCall(owner, slimDeployment())
	if err != nil {
		b.Fatal(err)
	}
	sealed, _ := sealedBy(t, a.FieldManager(), c.obj)
	values, _ := appliedBy(t, a.FieldManager(), c.obj)
	for name, live := range map[string]client.Object{"sealed": sealed, "values": values} {
		slim(live, gvk)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c, err := a.newCall(owner, slimDeployment())
				if err != nil {
					b.Fatal(err)
				}
				if same, _, err := a.holds(c, live); err != nil || !same {
					b.Fatalf("holds = %t, %v", same, err)
				}
			}
		})
	}
}

// TestDesiredDigestFormula pins desiredDigest to its formula, the first 20 hex digits of
// sha256(intentEncoding 0 kind 0 format 0 encoding): labels written by an earlier Convergo must still
// vouch for their children after an upgrade, or every child would cost a write. The objects come in
// sizes that make the pooled buffers grow and shrink between digests.
func TestDesiredDigestFormula(t *testing.T) {
	big := slimDeployment()
	for i := range 200 {
		big.Annotations[fmt.Sprintf("example.com/note-%d", i)] = "a note long enough to make a large encoding"
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(slimDeployment())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		obj    client.Object
		gvk    schema.GroupVersionKind
		format string
	}{
		{"large Deployment", big, appsv1.SchemeGroupVersion.WithKind("Deployment"), "protobuf"},
		{"Deployment", slimDeployment(), appsv1.SchemeGroupVersion.WithKind("Deployment"), "protobuf"},
		{"ClusterRole", role, rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), "protobuf"},
		{"StatefulSet", &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, appsv1.SchemeGroupVersion.WithKind("StatefulSet"), "json"},
		{"large Deployment again", big, appsv1.SchemeGroupVersion.WithKind("Deployment"), "protobuf"},
		{"unstructured", &unstructured.Unstructured{Object: u}, appsv1.SchemeGroupVersion.WithKind("Deployment"), "json"},
		{"empty ConfigMap", &corev1.ConfigMap{}, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "protobuf"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var data []byte
			var err error
			if tc.format == "protobuf" {
				data, err = tc.obj.(interface{ Marshal() ([]byte, error) }).Marshal()
			} else {
				data, err = json.Marshal(tc.obj)
			}
			if err != nil {
				t.Fatal(err)
			}
			input := []byte(intentEncoding + "\x00" + tc.gvk.String() + "\x00" + tc.format + "\x00")
			sum := sha256.Sum256(append(input, data...))
			want := hex.EncodeToString(sum[:])[:20]
			if diff := cmp.Diff(want, desiredDigest(tc.obj, tc.gvk)); diff != "" {
				t.Errorf("desiredDigest (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAppliedIntentPlace: the Applier records its digests in a label, except on a Service, where an
// annotation of the same name keeps them out of the labels the EndpointSlice and Endpoints controllers
// copy. Either way the record vouches for the apply, and a SlimCache copy keeps neither the label nor
// the annotation, only the digest.
func TestAppliedIntentPlace(t *testing.T) {
	service := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"example.com/note": "kept"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
	}
	cases := map[string]struct {
		desired client.Object
		gvk     schema.GroupVersionKind
		// want is where the record is: in the labels, in the annotations.
		want [2]bool
	}{
		"Deployment: a label":    {desired: slimDeployment(), gvk: appsv1.SchemeGroupVersion.WithKind("Deployment"), want: [2]bool{true, false}},
		"Service: an annotation": {desired: service, gvk: corev1.SchemeGroupVersion.WithKind("Service"), want: [2]bool{false, true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			live, hash := sealedBy(t, "convergo", tc.desired)
			_, inLabels := live.GetLabels()[LabelAppliedIntent]
			_, inAnnotations := live.GetAnnotations()[LabelAppliedIntent]
			if diff := cmp.Diff(tc.want, [2]bool{inLabels, inAnnotations}); diff != "" {
				t.Errorf("record in the labels, in the annotations (-want +got):\n%s", diff)
			}
			sealed, desired, ok := sealedDigest(live, live.GetManagedFields()[0])
			if diff := cmp.Diff([3]any{true, true, desiredDigest(tc.desired, tc.gvk)}, [3]any{ok, digestMatches(sealed, hash), desired}); diff != "" {
				t.Errorf("sealed, its digest is the intent's, desired digest (-want +got):\n%s", diff)
			}

			slim(live, tc.gvk)
			_, inLabels = live.GetLabels()[LabelAppliedIntent]
			_, inAnnotations = live.GetAnnotations()[LabelAppliedIntent]
			digest, _, slimmed := appliedDigest(live, "convergo")
			got := [4]any{inLabels, inAnnotations, slimmed, digestMatches(digest, hash)}
			if diff := cmp.Diff([4]any{false, false, true, true}, got); diff != "" {
				t.Errorf("slim copy: record in the labels, in the annotations, slimmed, digest is the intent's (-want +got):\n%s", diff)
			}
		})
	}
}
