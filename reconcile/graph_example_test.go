package reconcile_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/convergo-dev/convergo/reconcile"
)

func ExampleGraph_Order() {
	named := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	g := reconcile.NewGraph()
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
	g := reconcile.NewGraph()
	g.Add("a", named("a")).DependsOn("b")
	g.Add("b", named("b")).DependsOn("c")
	g.Add("c", named("c")).DependsOn("a")
	fmt.Println(g.Validate())

	g = reconcile.NewGraph()
	g.Add("web", named("web")).DependsOn("config")
	fmt.Println(g.Validate())
	// Output:
	// invalid child graph: dependency cycle a -> b -> c -> a
	// invalid child graph: child "web" depends on unknown child "config"
}
