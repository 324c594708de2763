package examples

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	memcachedv1 "github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	memcached "github.com/convergo-dev/convergo/examples/memcached/controller"
	welcomev1 "github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	welcome "github.com/convergo-dev/convergo/examples/welcome/controller"
	"github.com/convergo-dev/convergo/reconcile/graph"
)

// TestGraphDiagramsAreCurrent: the Mermaid diagram of each example's children in README.md (after the
// marker "<!-- graph: <example> -->") is what Graph.Mermaid draws for its sample.
func TestGraphDiagramsAreCurrent(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]func(t *testing.T) *graph.Graph{
		"welcome": func(t *testing.T) *graph.Graph {
			w := &welcomev1.Welcome{}
			readSample(t, filepath.Join("welcome", "config", "samples", "web_v1alpha1_welcome.yaml"), w)
			g, err := welcome.Children(w, nil)
			if err != nil {
				t.Fatal(err)
			}
			return g
		},
		"memcached": func(t *testing.T) *graph.Graph {
			mc := &memcachedv1.Memcached{}
			readSample(t, filepath.Join("memcached", "config", "samples", "cache_v1alpha1_memcached.yaml"), mc)
			g, err := memcached.Children(context.Background(), mc)
			if err != nil {
				t.Fatal(err)
			}
			return g
		},
	}
	for name, graph := range tests {
		t.Run(name, func(t *testing.T) {
			block := regexp.MustCompile("(?s)<!-- graph: " + name + " -->\\s*```mermaid\\n(.*?)```").FindSubmatch(readme)
			if block == nil {
				t.Fatalf("README.md has no <!-- graph: %s --> marker followed by a mermaid block", name)
			}
			scheme := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(graph(t).Mermaid(scheme), string(block[1])); diff != "" {
				t.Errorf("README.md's %s diagram is stale (-Graph.Mermaid +README.md):\n%s", name, diff)
			}
		})
	}
}

func readSample(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
