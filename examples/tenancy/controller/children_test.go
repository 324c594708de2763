package controller_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/convergo-dev/convergo/examples/tenancy/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/tenancy/controller"
)

// TestChildren: each member gets the namespace, then (when the spec asks) the quota and the admins'
// binding in it, all placed in that member.
func TestChildren(t *testing.T) {
	tests := map[string]struct {
		spec v1alpha1.TenantSpec
		want []string // "node@member <- dependencies"
	}{
		"namespace only": {
			spec: v1alpha1.TenantSpec{Members: []string{"eu"}},
			want: []string{"namespace-eu@eu <- []"},
		},
		"two members, quota and admins": {
			spec: v1alpha1.TenantSpec{Members: []string{"eu", "us"}, Admins: []string{"alice"},
				Quota: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("5")}},
			want: []string{
				"namespace-eu@eu <- []", "quota-eu@eu <- [namespace-eu]", "admins-eu@eu <- [namespace-eu]",
				"namespace-us@us <- []", "quota-us@us <- [namespace-us]", "admins-us@us <- [namespace-us]",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g, err := controller.Children(t.Context(), &v1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "payments"}, Spec: tc.spec})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Validate(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range g.Nodes() {
				got = append(got, n.Name()+"@"+n.Cluster()+" <- "+fmt.Sprint(n.Dependencies()))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
		})
	}
}
