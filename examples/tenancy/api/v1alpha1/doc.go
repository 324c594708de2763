// Package v1alpha1 holds the Tenant API (tenancy.convergo.dev/v1alpha1): a team's namespace, quota
// and access, placed in member clusters by the tenancy operator running in the hub.
//
//	t := &v1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "payments"}, Spec: v1alpha1.TenantSpec{
//		Members: []string{"eu-1", "us-1"}, Admins: []string{"alice@example.com"},
//	}}
//
// +kubebuilder:object:generate=true
// +groupName=tenancy.convergo.dev
package v1alpha1
