package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TenantSpec is what a team gets in each member cluster it is placed in.
type TenantSpec struct {
	// Members are the member clusters the tenant is placed in, by the names their kubeconfig Secrets
	// give them in the hub.
	//
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	Members []string `json:"members"`
	// Admins are the users given the cluster role "admin" in the tenant's namespace.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	Admins []string `json:"admins,omitempty"`
	// Quota is the hard limits of the tenant's namespace (a ResourceQuota); none when empty.
	//
	// +optional
	Quota corev1.ResourceList `json:"quota,omitempty"`
}

// TenantStatus is the observed state of a Tenant.
type TenantStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	//
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Placed are the member clusters where the tenant's namespace, quota and access hold the spec.
	//
	// +optional
	// +listType=set
	Placed []string `json:"placed,omitempty"`
	// Conditions are Ready, Reconciling and Stalled, following kstatus.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Tenant is a team's namespace, quota and access in member clusters. The tenant's namespace in each
// member has the tenant's name; it stays when the tenant goes or leaves the member (the team's
// workloads are in it), while the quota and the access go.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="Members",type=string,JSONPath=`.spec.members`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Tenant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TenantSpec   `json:"spec,omitempty"`
	Status TenantStatus `json:"status,omitempty"`
}

// GetConditions returns the tenant's conditions (status.Object).
func (t *Tenant) GetConditions() []metav1.Condition { return t.Status.Conditions }

// SetConditions sets the tenant's conditions (status.Object).
func (t *Tenant) SetConditions(c []metav1.Condition) { t.Status.Conditions = c }

// TenantList is a list of Tenants.
//
// +kubebuilder:object:root=true
type TenantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Tenant `json:"items"`
}
