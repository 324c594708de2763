// Package v1alpha1 holds the Welcome API (web.convergo.dev/v1alpha1).
//
// A Welcome asks for a small web site that greets a user, reached through a Service:
//
//	apiVersion: web.convergo.dev/v1alpha1
//	kind: Welcome
//	metadata:
//	  name: alice
//	spec:
//	  name: Alice
//	  email: alice@example.com
//	  passwordSecretRef:
//	    name: alice-password
//	    key: password
//
// The password is never part of the Welcome: spec.passwordSecretRef names a key of a Secret in the same
// namespace, and the operator hands it to the web server through a secretKeyRef environment variable.
//
// Register the types with a scheme through AddToScheme.
//
// +kubebuilder:object:generate=true
// +groupName=web.convergo.dev
package v1alpha1
