package reconcile

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
// AnnotationAppliedIntent, the digest is the intent's, whatever the values (a webhook may have
// pinned one on our own apply); once a field left the entry, or the annotation is not ours, the
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
		"the annotation changed by someone else": {change: func(t *testing.T, obj client.Object) {
			anns := obj.GetAnnotations()
			anns[AnnotationAppliedIntent] = "theirs"
			obj.SetAnnotations(anns)
			dropOwned(t, obj, fieldpath.MakePathOrDie("metadata", "annotations", AnnotationAppliedIntent))
		}, wantIntent: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			live, hash := sealedBy(t, "convergo", slimDeployment())
			if tc.change != nil {
				tc.change(t, live)
			}
			sealed, ok := sealedDigest(live, live.GetManagedFields()[0])
			digest := digestOf(live, appsv1.SchemeGroupVersion.WithKind("Deployment"), "convergo")
			want := [3]any{tc.wantSealed, tc.wantIntent, tc.wantSealed}
			if diff := cmp.Diff(want, [3]any{ok, digest == hash[:digestLen], sealed == digest}); diff != "" {
				t.Errorf("sealed, digest is the intent's, digest is the sealed one (-want +got):\n%s", diff)
			}
		})
	}
}

// sealedBy returns desired as the API server holds it after the Applier applied it with field
// manager manager, AnnotationAppliedIntent included, and the intent hash.
func sealedBy(t *testing.T, manager string, desired client.Object) (client.Object, string) {
	t.Helper()
	gvk := appsv1.SchemeGroupVersion.WithKind("Deployment")
	intent, err := Intent(desired, clientgoscheme.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	hash, err := IntentHash(intent)
	if err != nil {
		t.Fatal(err)
	}
	setIntentHash(intent, hash)
	body := withAppliedIntent(intent, gvk, hash)
	if _, ok := body["metadata"].(map[string]any)["annotations"].(map[string]any)[AnnotationAppliedIntent]; !ok {
		t.Fatal("no applied intent annotation")
	}
	raw, err := appliedFieldsJSON(body, gvk)
	if err != nil {
		t.Fatal(err)
	}
	live := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(runtime.DeepCopyJSON(body), live); err != nil {
		t.Fatal(err)
	}
	live.SetUID("uid-1")
	live.SetManagedFields([]metav1.ManagedFieldsEntry{{
		Manager: manager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: gvk.GroupVersion().String(),
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: raw},
	}})
	return live, hash
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
