package bench

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestToWelcome(t *testing.T) {
	ref := func(apiVersion, kind string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: "w", UID: "1", Controller: ptr.To(controller)}
	}
	cases := map[string]struct {
		refs []metav1.OwnerReference
		want []crreconcile.Request
	}{
		"controlled by a Welcome": {
			refs: []metav1.OwnerReference{ref("web.convergo.dev/v1alpha1", "Welcome", true)},
			want: []crreconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "w"}}},
		},
		"no owner":                           {},
		"a Welcome that does not control it": {refs: []metav1.OwnerReference{ref("web.convergo.dev/v1alpha1", "Welcome", false)}},
		"controlled by another kind":         {refs: []metav1.OwnerReference{ref("apps/v1", "Deployment", true)}},
		"a Welcome of another group":         {refs: []metav1.OwnerReference{ref("other.example.com/v1alpha1", "Welcome", true)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", OwnerReferences: tc.refs}}
			if diff := cmp.Diff(tc.want, toWelcome(t.Context(), cm)); diff != "" {
				t.Errorf("toWelcome (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReceiverFor(t *testing.T) {
	plain := func(cfg *rest.Config) { cfg.DisableCompression = true }
	tests := map[string]struct {
		impl Implementation
		want bool // DisableCompression of the receiver's client configuration
	}{
		"default client":       {impl: Implementation{Name: "expert"}, want: false},
		"uncompressed answers": {impl: Implementation{Name: "convergo-plain", Config: plain}, want: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := receiverFor(tt.impl)
			if diff := cmp.Diff("receiver", got.Name); diff != "" {
				t.Errorf("Name (-want +got):\n%s", diff)
			}
			if got.Setup == nil || got.Cache == nil {
				t.Error("the receiver lost its setup or cache options")
			}
			if diff := cmp.Diff(tt.want, got.clientConfig(&rest.Config{}).DisableCompression); diff != "" {
				t.Errorf("DisableCompression (-want +got):\n%s", diff)
			}
		})
	}
	if receiver.Config != nil {
		t.Error("receiverFor changed the receiver itself")
	}
}
