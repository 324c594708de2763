package apply_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/graph"
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
	// In an operator: apply.NewApplier(mgr.GetClient(), mgr.GetAPIReader(), ...).
	c := exampleClient()
	a := apply.NewApplier(c, c, apply.WithFieldManager("example"))

	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "1234"}}
	desired := func(greeting string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "app-config"}, // namespace: the owner's
			Data:       map[string]string{"greeting": greeting},
		}
	}
	for _, greeting := range []string{"hello", "hello", "bonjour"} {
		_, op, err := a.Apply(ctx, owner, desired(greeting))
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

// A namespaced owner (here a ConfigMap; in an operator your custom resource) may have cluster-scoped
// children, such as a ClusterRole. Kubernetes allows no owner reference from a cluster-scoped object to
// a namespaced one, so the garbage collector would never delete it: the child carries Convergo's
// tracking labels instead, which map its events to the owner (ownership.EnqueueTrackedOwner) and let
// Graph.Delete remove it before the owner's finalizer goes. The Reconciler does all of this for every
// child; nothing is wired by hand.
func ExampleApplier_Apply_clusterScopedChild() {
	ctx := context.Background()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), meta.RESTScopeRoot)
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithRESTMapper(mapper).Build()
	a := apply.NewApplier(c, c, apply.WithFieldManager("example"))

	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "1234"}}
	g := graph.New()
	g.Add("reader", &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "app-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
	})
	res, err := g.Apply(ctx, a, owner)
	if err != nil {
		fmt.Println(err)
		return
	}
	live := res.Child("reader").Object
	fmt.Println("ClusterRole", res.Child("reader").Operation)
	fmt.Println("owner references:", len(live.GetOwnerReferences()))
	fmt.Println("tracked by owner:", ownership.IsTrackedBy(live, owner))

	// On the owner's deletion (the Reconciler calls this until done, then removes its finalizer):
	for done := false; !done; {
		res, err := g.Delete(ctx, a, owner)
		if err != nil {
			fmt.Println(err)
			return
		}
		done = res.Done
	}
	err = c.Get(ctx, client.ObjectKey{Name: "app-reader"}, &rbacv1.ClusterRole{})
	fmt.Println("ClusterRole gone:", apierrors.IsNotFound(err))
	// Output:
	// ClusterRole Created
	// owner references: 0
	// tracked by owner: true
	// ClusterRole gone: true
}
