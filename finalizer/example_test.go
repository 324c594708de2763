package finalizer_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"github.com/convergo-dev/convergo/finalizer"
)

// printPatches is a fake client that prints every patch it receives.
func printPatches(objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
				data, _ := p.Data(obj)
				fmt.Printf("  patch %s\n", data)
				return c.Patch(ctx, obj, p, opts...)
			},
		}).Build()
}

func ExampleEnsure() {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "app", Namespace: "default", Finalizers: []string{"other.example.com/keep"},
	}}
	c := printPatches(cm)

	added, err := finalizer.Ensure(ctx, c, cm, "cache.example.com/finalizer")
	fmt.Println("added:", added, err, cm.Finalizers)

	// Already there: no request.
	added, err = finalizer.Ensure(ctx, c, cm, "cache.example.com/finalizer")
	fmt.Println("added:", added, err)
	// Output:
	//   patch [{"op":"test","path":"/metadata/finalizers","value":["other.example.com/keep"]},{"op":"add","path":"/metadata/finalizers/-","value":"cache.example.com/finalizer"}]
	// added: true <nil> [other.example.com/keep cache.example.com/finalizer]
	// added: false <nil>
}

func ExampleRemove() {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "app", Namespace: "default",
		Finalizers: []string{"other.example.com/keep", "cache.example.com/finalizer"},
	}}
	c := printPatches(cm)

	removed, err := finalizer.Remove(ctx, c, cm, "cache.example.com/finalizer")
	fmt.Println("removed:", removed, err, cm.Finalizers)
	// Output:
	//   patch [{"op":"test","path":"/metadata/finalizers/1","value":"cache.example.com/finalizer"},{"op":"remove","path":"/metadata/finalizers/1"}]
	// removed: true <nil> [other.example.com/keep]
}

func ExampleFinalize() {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "app", Namespace: "default", Finalizers: []string{"cache.example.com/finalizer"},
	}}
	c := printPatches(cm)

	pending := 2 // external resources still to release
	cleanup := func(ctx context.Context) (bool, error) {
		pending--
		fmt.Println("  cleanup, pending:", pending)
		return pending == 0, nil
	}
	for range 3 {
		done, err := finalizer.Finalize(ctx, c, cm, "cache.example.com/finalizer", cleanup)
		fmt.Println("done:", done, err, cm.Finalizers)
	}
	// Output:
	//   cleanup, pending: 1
	// done: false <nil> [cache.example.com/finalizer]
	//   cleanup, pending: 0
	//   patch [{"op":"test","path":"/metadata/finalizers/0","value":"cache.example.com/finalizer"},{"op":"remove","path":"/metadata/finalizers/0"}]
	// done: true <nil> []
	// done: true <nil> []
}

// The admission policy and its binding, as YAML to ship with the operator (its config/admission).
func ExampleAdmissionPolicy() {
	policy, err := finalizer.AdmissionPolicy("cache.example.com/finalizer",
		schema.GroupResource{Group: "cache.example.com", Resource: "memcacheds"})
	if err != nil {
		fmt.Println(err)
		return
	}
	binding := finalizer.AdmissionPolicyBinding(policy, nil)
	for _, obj := range []any{policy, binding} {
		out, err := yaml.Marshal(obj)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("---\n%s", out)
	}
	// Output:
	// ---
	// apiVersion: admissionregistration.k8s.io/v1
	// kind: MutatingAdmissionPolicy
	// metadata:
	//   name: finalizer.cache.example.com.finalizer
	// spec:
	//   failurePolicy: Ignore
	//   matchConstraints:
	//     resourceRules:
	//     - apiGroups:
	//       - cache.example.com
	//       apiVersions:
	//       - '*'
	//       operations:
	//       - CREATE
	//       resources:
	//       - memcacheds
	//   mutations:
	//   - jsonPatch:
	//       expression: '!has(object.metadata.finalizers) ? [JSONPatch{op: "add", path:
	//         "/metadata/finalizers", value: ["cache.example.com/finalizer"]}] : "cache.example.com/finalizer"
	//         in object.metadata.finalizers ? [] : [JSONPatch{op: "add", path: "/metadata/finalizers/-",
	//         value: "cache.example.com/finalizer"}]'
	//     patchType: JSONPatch
	//   reinvocationPolicy: Never
	// ---
	// apiVersion: admissionregistration.k8s.io/v1
	// kind: MutatingAdmissionPolicyBinding
	// metadata:
	//   name: finalizer.cache.example.com.finalizer
	// spec:
	//   policyName: finalizer.cache.example.com.finalizer
}
