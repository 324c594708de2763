package fakes_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/convergo-dev/convergo/testing/fakes"
)

const appliedCM = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"ns"},"data":{"k":"v"}}`

func TestApplyPatch(t *testing.T) {
	cases := map[string]struct {
		patch    client.Patch
		opts     []client.PatchOption
		into     client.Object
		wantErr  bool
		wantData map[string]string // of the stored ConfigMap; nil: not stored
	}{
		"typed answer": {
			patch:    client.RawPatch(types.ApplyPatchType, []byte(appliedCM)),
			opts:     []client.PatchOption{client.FieldOwner("op"), client.ForceOwnership},
			into:     &corev1.ConfigMap{},
			wantData: map[string]string{"k": "v"},
		},
		"unstructured answer": {
			patch:    client.RawPatch(types.ApplyPatchType, []byte(appliedCM)),
			opts:     []client.PatchOption{client.FieldOwner("op")},
			into:     &unstructured.Unstructured{},
			wantData: map[string]string{"k": "v"},
		},
		"dry run stores nothing": {
			patch: client.RawPatch(types.ApplyPatchType, []byte(appliedCM)),
			opts:  []client.PatchOption{client.FieldOwner("op"), client.DryRunAll},
			into:  &corev1.ConfigMap{},
		},
		"not an apply patch": {
			patch:   client.RawPatch(types.MergePatchType, []byte(`{"data":{"k":"v"}}`)),
			into:    &corev1.ConfigMap{},
			wantErr: true,
		},
		"body that is not JSON": {
			patch:   client.RawPatch(types.ApplyPatchType, []byte(`data: {k: v}`)),
			into:    &corev1.ConfigMap{},
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(newScheme()).Build()
			tc.into.SetName("cm")
			tc.into.SetNamespace("ns")
			if _, ok := tc.into.(*unstructured.Unstructured); ok {
				tc.into.GetObjectKind().SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
			}
			err := fakes.ApplyPatch(t.Context(), c, tc.into, tc.patch, tc.opts...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ApplyPatch error = %v, want error %t", err, tc.wantErr)
			}
			var stored corev1.ConfigMap
			getErr := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "cm"}, &stored)
			if tc.wantData == nil {
				if !apierrors.IsNotFound(getErr) {
					t.Errorf("stored object: %v, want none", getErr)
				}
				return
			}
			if getErr != nil {
				t.Fatal(getErr)
			}
			if diff := cmp.Diff(tc.wantData, stored.Data); diff != "" {
				t.Errorf("stored data (-want +got):\n%s", diff)
			}
			// Stored with a resourceVersion, and the answer is the stored object.
			if stored.ResourceVersion == "" || tc.into.GetResourceVersion() != stored.ResourceVersion {
				t.Errorf("resourceVersion: stored %q, answer %q; want the same, not empty", stored.ResourceVersion, tc.into.GetResourceVersion())
			}
		})
	}
}

func TestClientRecordsApplyPatches(t *testing.T) {
	boom := errors.New("boom")
	c := fakes.NewClient(newScheme(), fakes.WithError(fakes.VerbApply, "ConfigMap", boom))
	cm := &corev1.ConfigMap{}
	cm.Name, cm.Namespace = "cm", "ns"
	err := c.Patch(t.Context(), cm, client.RawPatch(types.ApplyPatchType, []byte(appliedCM)), client.FieldOwner("op"))
	if !errors.Is(err, boom) {
		t.Errorf("apply patch error = %v, want the injected %v", err, boom)
	}
	merge := &corev1.ConfigMap{}
	merge.Name, merge.Namespace = "cm", "ns"
	if err := c.Patch(t.Context(), merge, client.RawPatch(types.MergePatchType, []byte(`{"data":{"k":"w"}}`))); !apierrors.IsNotFound(err) {
		t.Errorf("merge patch of a missing object: %v, want NotFound (not the apply fault)", err)
	}
	want := []fakes.Op{
		{Verb: fakes.VerbApply, Kind: "ConfigMap", Namespace: "ns", Name: "cm"},
		{Verb: fakes.VerbPatch, Kind: "ConfigMap", Namespace: "ns", Name: "cm"},
	}
	if diff := cmp.Diff(want, c.Calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// A fake client of one's own sends apply patches through ApplyPatch in its interceptor.
func TestApplyPatchInInterceptor(t *testing.T) {
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(newScheme()).Build(), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if patch.Type() == types.ApplyPatchType {
				return fakes.ApplyPatch(ctx, c, obj, patch, opts...)
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	cm := &corev1.ConfigMap{}
	cm.Name, cm.Namespace = "cm", "ns"
	if err := c.Patch(t.Context(), cm, client.RawPatch(types.ApplyPatchType, []byte(appliedCM)), client.FieldOwner("op")); err != nil {
		t.Fatal(err)
	}
	if cm.ResourceVersion == "" || cm.Data["k"] != "v" {
		t.Errorf("answer: resourceVersion %q, data %v; want a version and k=v", cm.ResourceVersion, cm.Data)
	}
}
