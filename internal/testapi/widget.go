package testapi

import (
	"path/filepath"
	"runtime"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of the test types.
var GroupVersion = schema.GroupVersion{Group: "test.convergo.dev", Version: "v1alpha1"}

var schemeBuilder = kruntime.NewSchemeBuilder(func(s *kruntime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Widget{}, &WidgetList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
})

// AddToScheme adds the test types to a scheme.
var AddToScheme = schemeBuilder.AddToScheme

// CRDDir returns the absolute path of the directory holding the test types' CRD manifests.
// It is derived from this source file's location, so it works from any test package of the module.
func CRDDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "crd"
	}
	return filepath.Join(filepath.Dir(file), "crd")
}

// WidgetSpec is the desired state of a Widget.
type WidgetSpec struct {
	// Data is free-form data a test reconciler copies into child objects.
	// +optional
	Data map[string]string `json:"data,omitempty"`

	// Invalid, when not empty, makes test reconcilers report the spec as invalid with this text.
	// +optional
	Invalid string `json:"invalid,omitempty"`

	// Replicas is a number tests may use freely.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas,omitempty"`
}

// WidgetStatus is the observed state of a Widget.
type WidgetStatus struct {
	// ObservedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are the Widget's conditions.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ReadyChildren counts children found ready.
	// +optional
	ReadyChildren int32 `json:"readyChildren,omitempty"`

	// Summary is a free-form status text.
	// +optional
	Summary string `json:"summary,omitempty"`
}

// Widget is a small namespaced resource used by the library's tests.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	// +optional
	Spec WidgetSpec `json:"spec,omitempty"`

	// Status is the observed state.
	// +optional
	Status WidgetStatus `json:"status,omitempty"`
}

// GetConditions returns the Widget's conditions.
func (w *Widget) GetConditions() []metav1.Condition { return w.Status.Conditions }

// SetConditions replaces the Widget's conditions.
func (w *Widget) SetConditions(c []metav1.Condition) { w.Status.Conditions = c }

// WidgetList is a list of Widgets.
//
// +kubebuilder:object:root=true
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the Widgets.
	Items []Widget `json:"items"`
}
