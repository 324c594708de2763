package graph

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestGraphRender(t *testing.T) {
	cm := func() *corev1.ConfigMap { return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}} }
	widget := &unstructured.Unstructured{}
	widget.SetAPIVersion("example.com/v1")
	widget.SetKind("Widget")
	tests := map[string]struct {
		graph        func() *Graph
		mermaid, dot string
	}{
		"empty": {
			graph:   func() *Graph { return New() },
			mermaid: "flowchart LR\n",
			dot:     "digraph children {\n  rankdir=LR;\n  node [shape=box];\n}\n",
		},
		"quotes in names, kinds without a scheme, two dependencies": {
			graph: func() *Graph {
				g := New()
				g.Add(`say "hi"`, cm())
				g.Add("w-1", widget)
				g.Add("w_1", cm()).DependsOn(`say "hi"`, "w-1")
				return g
			},
			mermaid: "flowchart LR\n" +
				"  c0[\"say #quot;hi#quot;<br/>ConfigMap\"]\n" +
				"  c1[\"w-1<br/>Widget\"]\n" +
				"  c2[\"w_1<br/>ConfigMap\"]\n" +
				"  c0 --> c2\n  c1 --> c2\n",
			dot: "digraph children {\n  rankdir=LR;\n  node [shape=box];\n" +
				"  \"say \\\"hi\\\"\" [label=\"say \\\"hi\\\"\\nConfigMap\"];\n" +
				"  \"w-1\" [label=\"w-1\\nWidget\"];\n" +
				"  \"w_1\" [label=\"w_1\\nConfigMap\"];\n" +
				"  \"say \\\"hi\\\"\" -> \"w_1\";\n  \"w-1\" -> \"w_1\";\n}\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := tc.graph()
			if diff := cmp.Diff(tc.mermaid, g.Mermaid(nil)); diff != "" {
				t.Errorf("Mermaid (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.dot, g.DOT(nil)); diff != "" {
				t.Errorf("DOT (-want +got):\n%s", diff)
			}
		})
	}
}
