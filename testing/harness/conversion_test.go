//go:build integration

package harness_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/testing/harness"
)

// The Gadget kind of testdata/conversion/gadgets.yaml: v1 (the hub, stored) has spec.size, v2 spec.count.
var (
	gadgetV1 = schema.GroupVersion{Group: "harness.convergo.dev", Version: "v1"}
	gadgetV2 = schema.GroupVersion{Group: "harness.convergo.dev", Version: "v2"}
)

type gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Size int64 `json:"size,omitempty"`
	} `json:"spec"`
}

func (g *gadget) DeepCopyObject() runtime.Object {
	out := *g
	g.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// Hub implements conversion.Hub.
func (*gadget) Hub() {}

type gadgetV2Object struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Count int64 `json:"count,omitempty"`
	} `json:"spec"`
}

func (g *gadgetV2Object) DeepCopyObject() runtime.Object {
	out := *g
	g.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// ConvertTo implements conversion.Convertible.
func (g *gadgetV2Object) ConvertTo(hub conversion.Hub) error {
	h := hub.(*gadget)
	h.ObjectMeta = g.ObjectMeta
	h.Spec.Size = g.Spec.Count
	return nil
}

// ConvertFrom implements conversion.Convertible.
func (g *gadgetV2Object) ConvertFrom(hub conversion.Hub) error {
	h := hub.(*gadget)
	g.ObjectMeta = h.ObjectMeta
	g.Spec.Count = h.Spec.Size
	return nil
}

// addGadgets registers both versions of Gadget, which makes the kind convertible in the scheme.
func addGadgets(s *runtime.Scheme) error {
	s.AddKnownTypeWithName(gadgetV1.WithKind("Gadget"), &gadget{})
	s.AddKnownTypeWithName(gadgetV2.WithKind("Gadget"), &gadgetV2Object{})
	metav1.AddToGroupVersion(s, gadgetV1)
	metav1.AddToGroupVersion(s, gadgetV2)
	return nil
}

// TestConversionWebhookIsCalled shows the API server converting Gadgets between their versions
// through the test's conversion webhook: WithWebhooks pointed the CRD's conversion at the test's
// webhook server, where the manager serves /convert. Without it, nothing converts spec.size to
// spec.count.
func TestConversionWebhookIsCalled(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	env.StartManager(t, func(mgr manager.Manager) error {
		return builder.WebhookManagedBy(mgr, &gadgetV2Object{}).Complete()
	})

	tests := map[string]struct {
		create *unstructured.Unstructured
		readAs schema.GroupVersion
		wanted string
	}{
		"stored v1, read as v2":     {create: gadgetObject(gadgetV1, "size"), readAs: gadgetV2, wanted: "count"},
		"created as v2, read as v1": {create: gadgetObject(gadgetV2, "count"), readAs: gadgetV1, wanted: "size"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.create.SetNamespace(ns)
			if err := env.Client.Create(t.Context(), tc.create); err != nil {
				t.Fatalf("create: %v", err)
			}
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(tc.readAs.WithKind("Gadget"))
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(tc.create), got); err != nil {
				t.Fatalf("get as %s: %v", tc.readAs, err)
			}
			spec, _, _ := unstructured.NestedMap(got.Object, "spec")
			if diff := cmp.Diff(map[string]any{tc.wanted: int64(3)}, spec); diff != "" {
				t.Errorf("spec read as %s (-want +got):\n%s", tc.readAs, diff)
			}
		})
	}
}

// gadgetObject returns a Gadget of version gv with spec.<field> 3.
func gadgetObject(gv schema.GroupVersion, field string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{field: int64(3)}}}
	u.SetGroupVersionKind(gv.WithKind("Gadget"))
	u.SetGenerateName("gadget-")
	return u
}
