package graph_test

import (
	"context"
	"fmt"

	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/graph"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func ExampleGraph_Order() {
	named := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	g := graph.New()
	g.Add("service", named("service")).DependsOn("deployment")
	g.Add("deployment", named("deployment")).DependsOn("config", "secret")
	g.Add("config", named("config"))
	g.Add("secret", named("secret"))

	order, err := g.Order()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("apply order:", order)
	layers, _ := g.Layers()
	fmt.Println("delete layers, last first:", layers)
	// Output:
	// apply order: [config secret deployment service]
	// delete layers, last first: [[config secret] [deployment] [service]]
}

func ExampleGraph_Validate() {
	named := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	g := graph.New()
	g.Add("a", named("a")).DependsOn("b")
	g.Add("b", named("b")).DependsOn("c")
	g.Add("c", named("c")).DependsOn("a")
	fmt.Println(g.Validate())

	g = graph.New()
	g.Add("web", named("web")).DependsOn("config")
	fmt.Println(g.Validate())
	// Output:
	// invalid child graph: dependency cycle a -> b -> c -> a
	// invalid child graph: child "web" depends on unknown child "config"
}

// A child is applied only once the children it depends on are ready; until then the result says what
// the graph waits for.
func ExampleGraph_Apply() {
	ctx := context.Background()
	c := exampleClient()
	a := apply.NewApplier(c, c) // in an operator: mgr.GetClient(), mgr.GetAPIReader()
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default", UID: "1234"}}

	children := func(migrated string) *graph.Graph {
		g := graph.New()
		g.Add("schema", &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "shop-schema"},
			Data:       map[string]string{"migrated": migrated},
		}).ReadyWhen(func(live client.Object) (bool, string) {
			if live.(*corev1.ConfigMap).Data["migrated"] == "yes" {
				return true, ""
			}
			return false, "migration pending"
		})
		g.Add("app", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shop-app"}}).DependsOn("schema")
		return g
	}
	for _, migrated := range []string{"no", "yes", "yes"} {
		res, err := children(migrated).Apply(ctx, a, owner)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, c := range res.Children {
			fmt.Printf("%s: applied=%v operation=%q ready=%v\n", c.Name, c.Applied, c.Operation, c.Ready)
		}
		fmt.Printf("ready=%v waiting=%q\n", res.Ready, res.Waiting)
	}
	// Output:
	// schema: applied=true operation="Created" ready=false
	// app: applied=false operation="" ready=false
	// ready=false waiting=["schema: migration pending" "app waits for schema: migration pending"]
	// schema: applied=true operation="Updated" ready=true
	// app: applied=true operation="Created" ready=true
	// ready=true waiting=[]
	// schema: applied=true operation="Unchanged" ready=true
	// app: applied=true operation="Unchanged" ready=true
	// ready=true waiting=[]
}

// exampleClient stands in for the manager's client of an operator (mgr.GetClient()), so that the
// examples run without an API server.
func exampleClient() client.Client {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Service"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	return fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithRESTMapper(mapper).Build()
}
