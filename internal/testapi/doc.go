// Package testapi holds a tiny custom resource, Widget (group test.convergo.dev, version v1alpha1), for
// the library's own tests: it has a spec, a status subresource with conditions and observedGeneration, and
// a CRD manifest in the crd directory that tests install on a real API server.
//
// It is internal: operators built with Convergo define their own API types.
//
// Usage in a test package:
//
//	func TestMain(m *testing.M) {
//		harness.Main(m,
//			harness.WithCRDPaths(testapi.CRDDir()),
//			harness.WithSchemeAdders(testapi.AddToScheme))
//	}
//
//	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: ns}}
//
// The deepcopy functions and the CRD are generated with controller-gen:
//
//	bin/controller-gen-v0.23.0 object paths=./internal/testapi/...
//	bin/controller-gen-v0.23.0 crd paths=./internal/testapi/... output:crd:artifacts:config=internal/testapi/crd
//
// +kubebuilder:object:generate=true
// +groupName=test.convergo.dev
// +versionName=v1alpha1
package testapi
