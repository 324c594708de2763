// Package v1alpha1 holds the Memcached API (cache.convergo.dev/v1alpha1).
//
// A Memcached asks for a memcached cache of spec.size pods behind a Service:
//
//	apiVersion: cache.convergo.dev/v1alpha1
//	kind: Memcached
//	metadata:
//	  name: sessions
//	spec:
//	  size: 3
//
// Register the types with a scheme through AddToScheme.
//
// +kubebuilder:object:generate=true
// +groupName=cache.convergo.dev
package v1alpha1
