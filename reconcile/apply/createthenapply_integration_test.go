//go:build integration

package apply_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/testing/harness"
)

// TestIntegrationFirstWriteMustBeAnApply shows, on the real API server, why Apply creates a child with
// a server-side apply although a create costs the API server less: a child created by a plain create has its fields owned by the field manager's Update
// entry, even when the create claims them for an Apply entry, and a later apply that drops a field
// cannot remove what that entry still owns (invariant 2: a field removed from the desired object is
// removed from the live one).
func TestIntegrationFirstWriteMustBeAnApply(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	const owner = "convergo-test"
	configMap := func(name string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Data:       data,
		}
	}
	tests := []struct {
		name     string
		first    func(t *testing.T, cm *corev1.ConfigMap) error
		wantData map[string]string
	}{{
		name: "server-side apply",
		first: func(t *testing.T, cm *corev1.ConfigMap) error {
			return env.Client.Patch(t.Context(), cm, client.Apply, client.FieldOwner(owner), client.ForceOwnership)
		},
		wantData: map[string]string{"b": "2"},
	}, {
		name: "create",
		first: func(t *testing.T, cm *corev1.ConfigMap) error {
			return env.Client.Create(t.Context(), cm, client.FieldOwner(owner))
		},
		wantData: map[string]string{"a": "1", "b": "2"},
	}, {
		name: "create claiming an Apply entry",
		first: func(t *testing.T, cm *corev1.ConfigMap) error {
			cm.ManagedFields = []metav1.ManagedFieldsEntry{{
				Manager: owner, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:a":{},"f:b":{}}}`)},
			}}
			return env.Client.Create(t.Context(), cm, client.FieldOwner(owner))
		},
		wantData: map[string]string{"a": "1", "b": "2"},
	}}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "first-write-" + string(rune('a'+i))
			if err := tt.first(t, configMap(name, map[string]string{"a": "1", "b": "2"})); err != nil {
				t.Fatalf("first write: %v", err)
			}
			// The desired object drops key a; the same field manager applies it.
			applied := configMap(name, map[string]string{"b": "2"})
			if err := env.Client.Patch(t.Context(), applied, client.Apply, client.FieldOwner(owner), client.ForceOwnership); err != nil {
				t.Fatalf("apply without key a: %v", err)
			}
			if diff := cmp.Diff(tt.wantData, applied.Data); diff != "" {
				t.Errorf("data after the apply that dropped a (-want +got):\n%s", diff)
			}
		})
	}
}
