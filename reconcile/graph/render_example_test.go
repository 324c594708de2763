package graph_test

import (
	"fmt"

	"github.com/convergo-dev/convergo/reconcile/graph"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// welcomeShapedGraph is the Welcome example's graph: the Deployment mounts the page, the Service
// depends on nothing.
func welcomeShapedGraph() *graph.Graph {
	meta := metav1.ObjectMeta{Name: "alice"}
	g := graph.New()
	g.Add("page", &corev1.ConfigMap{ObjectMeta: meta})
	g.Add("deployment", &appsv1.Deployment{ObjectMeta: meta}).DependsOn("page")
	g.Add("service", &corev1.Service{ObjectMeta: meta})
	return g
}

func ExampleGraph_Mermaid() {
	fmt.Print(welcomeShapedGraph().Mermaid(clientgoscheme.Scheme))
	// Output:
	// flowchart LR
	//   c0["page<br/>ConfigMap"]
	//   c1["deployment<br/>Deployment"]
	//   c2["service<br/>Service"]
	//   c0 --> c1
}

func ExampleGraph_DOT() {
	fmt.Print(welcomeShapedGraph().DOT(clientgoscheme.Scheme))
	// Output:
	// digraph children {
	//   rankdir=LR;
	//   node [shape=box];
	//   "page" [label="page\nConfigMap"];
	//   "deployment" [label="deployment\nDeployment"];
	//   "service" [label="service\nService"];
	//   "page" -> "deployment";
	// }
}
