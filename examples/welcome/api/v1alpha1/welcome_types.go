package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultImage is the web server image used when spec.image is not set (built from examples/welcome/web).
const DefaultImage = "ghcr.io/convergo-dev/welcome-web:v0.1.0"

// WelcomeSpec is the desired state of a Welcome site.
//
// +kubebuilder:validation:XValidation:rule="!has(self.nodePort) || self.serviceType == 'NodePort'",message="nodePort can only be set when serviceType is NodePort"
type WelcomeSpec struct {
	// Name is the name of the user the site greets ("Hello <name>").
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^\S(.*\S)?$`
	Name string `json:"name"`

	// Image is the web server container image.
	//
	// +optional
	// +kubebuilder:default="ghcr.io/convergo-dev/welcome-web:v0.1.0"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^\S+$`
	Image string `json:"image,omitempty"`

	// Replicas is the number of web server pods.
	//
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	Replicas *int32 `json:"replicas,omitempty"`

	// Port is the TCP port the web server listens on and the Service exposes.
	//
	// +optional
	// +kubebuilder:default=8088
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`

	// ServiceType is how the site is exposed: ClusterIP (inside the cluster) or NodePort (also on every node).
	//
	// +optional
	// +kubebuilder:default=ClusterIP
	// +kubebuilder:validation:Enum=ClusterIP;NodePort
	ServiceType corev1.ServiceType `json:"serviceType,omitempty"`

	// NodePort pins the node port when serviceType is NodePort; the cluster picks one when unset.
	//
	// +optional
	// +kubebuilder:validation:Minimum=30000
	// +kubebuilder:validation:Maximum=32767
	NodePort *int32 `json:"nodePort,omitempty"`

	// UserID is the Unix user ID the web server runs as (never root).
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	UserID *int64 `json:"userID,omitempty"`

	// Groups are the names of the user's groups, shown on the page.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=32
	// +kubebuilder:validation:items:Pattern=`^[a-z_][a-z0-9_-]*$`
	Groups []string `json:"groups,omitempty"`

	// Email is the user's e-mail address, shown on the page.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=254
	// +kubebuilder:validation:Format=email
	Email string `json:"email,omitempty"`

	// PasswordSecretRef names the Secret key holding the password of the site's private page.
	// The Secret must be in the Welcome's namespace. The password never appears in the Welcome,
	// its status, events or logs: the web server reads it from a secretKeyRef environment variable.
	//
	// +optional
	PasswordSecretRef *SecretKeyRef `json:"passwordSecretRef,omitempty"`
}

// SecretKeyRef names one key of a Secret in the same namespace.
type SecretKeyRef struct {
	// Name is the name of the Secret.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// Key is the key within the Secret's data.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +kubebuilder:validation:XValidation:rule="self != '.' && !self.startsWith('..')",message="key must not be '.' or start with '..'"
	Key string `json:"key"`
}

// WelcomeStatus is the observed state of a Welcome site.
type WelcomeStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	//
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ReadyReplicas is the number of web server pods that are ready.
	//
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// ServiceURL is the address of the page inside the cluster: http://<service>.<namespace>.svc:<port>/hello/.
	//
	// +optional
	ServiceURL string `json:"serviceURL,omitempty"`

	// NodePort is the node port the Service was given, when serviceType is NodePort.
	//
	// +optional
	NodePort int32 `json:"nodePort,omitempty"`

	// NodePortURL is the address of the page on any node, when serviceType is NodePort:
	// http://<node-ip>:<nodePort>/hello/ with <node-ip> standing for the address of any node.
	//
	// +optional
	NodePortURL string `json:"nodePortURL,omitempty"`

	// Conditions are Ready, Reconciling and Stalled, following kstatus.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Welcome is a web site greeting spec.name, made of a ConfigMap (the page), a Deployment serving it and
// a Service, all named after the Welcome.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wel,categories=convergo
// +kubebuilder:printcolumn:name="Greets",type=string,JSONPath=`.spec.name`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.serviceURL`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name must be at most 63 characters: it names the Service"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter): it names the Service"
type Welcome struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	//
	// +required
	Spec WelcomeSpec `json:"spec"`

	// Status is the observed state, written by the operator.
	//
	// +optional
	Status WelcomeStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (w *Welcome) GetConditions() []metav1.Condition { return w.Status.Conditions }

// SetConditions replaces the status conditions.
func (w *Welcome) SetConditions(c []metav1.Condition) { w.Status.Conditions = c }

// GetObservedGeneration returns status.observedGeneration.
func (w *Welcome) GetObservedGeneration() int64 { return w.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (w *Welcome) SetObservedGeneration(g int64) { w.Status.ObservedGeneration = g }

// WelcomeList is a list of Welcome sites.
//
// +kubebuilder:object:root=true
type WelcomeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the sites.
	Items []Welcome `json:"items"`
}
