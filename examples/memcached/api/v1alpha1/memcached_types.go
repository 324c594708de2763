package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultImage is the memcached image used when spec.image is not set.
const DefaultImage = "docker.io/library/memcached:1.6.39-alpine"

// MemcachedSpec is the desired state of a Memcached cache.
//
// +kubebuilder:validation:XValidation:rule="!has(self.maxUnavailable) || self.maxUnavailable < self.size",message="maxUnavailable must be less than size so that a rollout keeps at least one memcached pod serving"
type MemcachedSpec struct {
	// Size is the number of memcached pods.
	//
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Size int32 `json:"size"`

	// Image is the memcached container image.
	//
	// +optional
	// +kubebuilder:default="docker.io/library/memcached:1.6.39-alpine"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^\S+$`
	Image string `json:"image,omitempty"`

	// ImagePullPolicy is the pull policy of the memcached container; the cluster's default applies when unset.
	//
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// Port is the TCP port memcached listens on and the Service exposes.
	//
	// +optional
	// +kubebuilder:default=11211
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`

	// CacheSizeMB is the memory memcached may use for items, in mebibytes (memcached -m).
	//
	// +optional
	// +kubebuilder:default=64
	// +kubebuilder:validation:Minimum=8
	// +kubebuilder:validation:Maximum=65536
	CacheSizeMB int32 `json:"cacheSizeMB,omitempty"`

	// MaxConnections is the maximum number of simultaneous connections per pod (memcached -c).
	//
	// +optional
	// +kubebuilder:default=1024
	// +kubebuilder:validation:Minimum=16
	// +kubebuilder:validation:Maximum=65536
	MaxConnections int32 `json:"maxConnections,omitempty"`

	// MaxUnavailable is the number of pods a rollout may take down at once; it must be less than size.
	// When unset the Deployment's default applies.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxUnavailable *int32 `json:"maxUnavailable,omitempty"`

	// Resources are the compute resources of each memcached container. A memory limit must leave room
	// for cacheSizeMB, and requests must not exceed limits; the operator reports a spec that breaks
	// either rule as Stalled (reason InvalidSpec) instead of creating pods that cannot run.
	//
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// MemcachedStatus is the observed state of a Memcached cache.
type MemcachedStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	//
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ReadyReplicas is the number of memcached pods that are ready.
	//
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// Nodes are the names of the memcached pods, sorted.
	//
	// +optional
	// +listType=set
	Nodes []string `json:"nodes,omitempty"`

	// Conditions are Ready, Reconciling and Stalled, following kstatus.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Memcached is a memcached cache of spec.size pods behind a Service of the same name.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mc,categories=convergo
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name must be at most 63 characters: it names the Service"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter): it names the Service"
type Memcached struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	//
	// +required
	Spec MemcachedSpec `json:"spec"`

	// Status is the observed state, written by the operator.
	//
	// +optional
	Status MemcachedStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (m *Memcached) GetConditions() []metav1.Condition { return m.Status.Conditions }

// SetConditions replaces the status conditions.
func (m *Memcached) SetConditions(c []metav1.Condition) { m.Status.Conditions = c }

// GetObservedGeneration returns status.observedGeneration.
func (m *Memcached) GetObservedGeneration() int64 { return m.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (m *Memcached) SetObservedGeneration(g int64) { m.Status.ObservedGeneration = g }

// MemcachedList is a list of Memcached caches.
//
// +kubebuilder:object:root=true
type MemcachedList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the caches.
	Items []Memcached `json:"items"`
}
