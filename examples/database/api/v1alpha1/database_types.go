package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeletionPolicy says what happens to a Database's PostgreSQL database, role and credentials Secret
// when the Database is deleted.
type DeletionPolicy string

const (
	// DeletionPolicyDelete drops the database and the role and deletes the Secret.
	DeletionPolicyDelete DeletionPolicy = "Delete"
	// DeletionPolicyRetain keeps the database, the role and the Secret.
	DeletionPolicyRetain DeletionPolicy = "Retain"
)

// Grant gives an existing PostgreSQL role privileges on the database.
type Grant struct {
	// Role is the name of an existing PostgreSQL role.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]*$`
	Role string `json:"role"`
	// Privileges are database privileges: CONNECT, CREATE, TEMPORARY.
	//
	// +required
	// +kubebuilder:validation:MinItems=1
	// +listType=set
	Privileges []Privilege `json:"privileges"`
}

// Privilege is a PostgreSQL database privilege.
//
// +kubebuilder:validation:Enum=CONNECT;CREATE;TEMPORARY
type Privilege string

// DatabaseSpec is the desired state of a Database.
type DatabaseSpec struct {
	// DatabaseName is the name of the PostgreSQL database; default: the Database's namespace and name,
	// "<namespace>_<name>" with "-" replaced by "_".
	//
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]*$`
	DatabaseName string `json:"databaseName,omitempty"`
	// Grants are the privileges other roles get on the database.
	//
	// +optional
	// +listType=map
	// +listMapKey=role
	Grants []Grant `json:"grants,omitempty"`
	// DeletionPolicy is what happens to the database, its role and the credentials Secret when the
	// Database is deleted: Delete (the default) or Retain.
	//
	// +optional
	// +kubebuilder:default=Delete
	// +kubebuilder:validation:Enum=Delete;Retain
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
	// Suspend stops the operator from changing anything for this Database until it is false again.
	//
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// DatabaseStatus is the observed state of a Database.
type DatabaseStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	//
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// DatabaseName is the name of the PostgreSQL database.
	//
	// +optional
	DatabaseName string `json:"databaseName,omitempty"`
	// SecretName is the name of the Secret holding the credentials and the connection URI.
	//
	// +optional
	SecretName string `json:"secretName,omitempty"`
	// Conditions are Ready, Reconciling and Stalled, following kstatus.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Database is a PostgreSQL database with a role of its own, the grants it declares, and a Secret
// "<name>-credentials" with the role's credentials and a connection URI.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pgdb,categories=convergo
// +kubebuilder:printcolumn:name="Database",type=string,JSONPath=`.status.databaseName`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 40",message="metadata.name must be at most 40 characters: it names the Secret and, by default, the database and its role"
type Database struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	//
	// +optional
	Spec DatabaseSpec `json:"spec,omitempty"`

	// Status is the observed state, written by the operator.
	//
	// +optional
	Status DatabaseStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (d *Database) GetConditions() []metav1.Condition { return d.Status.Conditions }

// SetConditions replaces the status conditions.
func (d *Database) SetConditions(c []metav1.Condition) { d.Status.Conditions = c }

// GetObservedGeneration returns status.observedGeneration.
func (d *Database) GetObservedGeneration() int64 { return d.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (d *Database) SetObservedGeneration(g int64) { d.Status.ObservedGeneration = g }

// DatabaseList is a list of Databases.
//
// +kubebuilder:object:root=true
type DatabaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the Databases.
	Items []Database `json:"items"`
}
