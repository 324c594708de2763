package reconcile_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile"
)

// exampleClient stands in for the manager's client of an operator (mgr.GetClient()), so that the
// examples run without an API server.
func exampleClient() client.Client {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	return fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithRESTMapper(mapper).Build()
}

func ExampleApplier_Apply() {
	ctx := context.Background()
	// In an operator: reconcile.NewApplier(mgr.GetClient(), mgr.GetScheme()).
	c := exampleClient()
	a := reconcile.NewApplier(c, clientgoscheme.Scheme, reconcile.WithFieldManager("example"))

	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "1234"}}
	desired := func(greeting string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "app-config"}, // namespace: the owner's
			Data:       map[string]string{"greeting": greeting},
		}
	}
	for _, greeting := range []string{"hello", "hello", "bonjour"} {
		op, err := a.Apply(ctx, owner, desired(greeting))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(greeting, op)
	}

	live := &corev1.ConfigMap{}
	_ = c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "app-config"}, live)
	fmt.Println("controlled by owner:", ownership.IsControlledBy(live, owner))
	fmt.Println("tracked by owner:", ownership.IsTrackedBy(live, owner))
	// Output:
	// hello Created
	// hello Unchanged
	// bonjour Updated
	// controlled by owner: true
	// tracked by owner: true
}
