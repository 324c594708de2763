// Package v1alpha1 holds the Database API (db.convergo.dev/v1alpha1).
//
// A Database asks for a PostgreSQL database, owned by a role of its own, with the grants it declares,
// and a Secret holding the role's credentials and a connection URI for applications:
//
//	apiVersion: db.convergo.dev/v1alpha1
//	kind: Database
//	metadata:
//	  name: orders
//	spec:
//	  grants:
//	  - role: reporting
//	    privileges: [CONNECT]
//
// Register the types with a scheme through AddToScheme.
//
// +kubebuilder:object:generate=true
// +groupName=db.convergo.dev
package v1alpha1
