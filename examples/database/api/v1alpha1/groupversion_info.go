package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of the Database types.
	GroupVersion = schema.GroupVersion{Group: "db.convergo.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the Database types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the Database types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
