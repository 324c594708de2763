package graph_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/convergo-dev/convergo/reconcile/graph"
)

// A graph spread over the owner's cluster and two member clusters: the ConfigMaps in the members
// wait for the local one, and the summary for both. Graph.Apply applies each node in its cluster
// (through Applier.In) in this order; Delete goes the other way.
func ExampleNode_InCluster() {
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"}}
	}
	g := graph.New()
	g.Add("base", cm("base"))
	g.Add("eu", cm("app")).InCluster("eu-1").DependsOn("base")
	g.Add("us", cm("app")).InCluster("us-1").DependsOn("base")
	g.Add("summary", cm("summary")).DependsOn("eu", "us")
	layers, err := g.Layers()
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, layer := range layers {
		fmt.Printf("layer %d:", i)
		for _, name := range layer {
			where := "here"
			if c := g.Node(name).Cluster(); c != "" {
				where = c
			}
			fmt.Printf(" %s (%s)", name, where)
		}
		fmt.Println()
	}
	// Output:
	// layer 0: base (here)
	// layer 1: eu (eu-1) us (us-1)
	// layer 2: summary (here)
}
