package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of the Memcached types.
	GroupVersion = schema.GroupVersion{Group: "cache.convergo.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the Memcached types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the Memcached types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
