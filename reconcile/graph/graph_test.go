package graph

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func cm(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// graphOf builds a graph from "name:dep1,dep2" specs, each child a ConfigMap of the same name.
func graphOf(specs ...string) *Graph {
	g := New()
	for _, s := range specs {
		name, deps, _ := strings.Cut(s, ":")
		n := g.Add(name, cm(name))
		if deps != "" {
			n.DependsOn(strings.Split(deps, ",")...)
		}
	}
	return g
}

func TestGraphValidate(t *testing.T) {
	cases := map[string]struct {
		graph   func() *Graph
		wantErr string // empty: valid
	}{
		"empty graph": {graph: func() *Graph { return New() }},
		"chain":       {graph: func() *Graph { return graphOf("a", "b:a", "c:b") }},
		"diamond":     {graph: func() *Graph { return graphOf("a", "b:a", "c:a", "d:b,c") }},
		"two-cycle": {
			graph:   func() *Graph { return graphOf("a:b", "b:a") },
			wantErr: "dependency cycle a -> b -> a",
		},
		"self-cycle": {
			graph:   func() *Graph { return graphOf("a:a") },
			wantErr: "dependency cycle a -> a",
		},
		"cycle behind a prefix": {
			graph:   func() *Graph { return graphOf("root:x", "x:y", "y:z", "z:x") },
			wantErr: "dependency cycle x -> y -> z -> x",
		},
		"unknown dependency": {
			graph:   func() *Graph { return graphOf("a", "b:a,missing") },
			wantErr: `child "b" depends on unknown child "missing"`,
		},
		"duplicate name": {
			graph:   func() *Graph { return graphOf("a", "b", "a") },
			wantErr: `duplicate child name "a"`,
		},
		"empty name": {
			graph:   func() *Graph { return graphOf("") },
			wantErr: "a child has an empty name",
		},
		"nil object": {
			graph: func() *Graph {
				g := New()
				g.Add("a", (*corev1.ConfigMap)(nil))
				return g
			},
			wantErr: `child "a" has no object`,
		},
		"same object twice": {
			graph: func() *Graph {
				g := New()
				g.Add("a", cm("x"))
				g.Add("b", cm("x"))
				return g
			},
			wantErr: `children "a" and "b" declare the same object`,
		},
		"the same object in two clusters": {
			graph: func() *Graph {
				g := New()
				g.Add("here", cm("x"))
				g.Add("in-a", cm("x")).InCluster("a")
				g.Add("in-b", cm("x")).InCluster("b")
				return g
			},
		},
		"the same object twice in a member": {
			graph: func() *Graph {
				g := New()
				g.Add("a1", cm("x")).InCluster("a")
				g.Add("a2", cm("x")).InCluster("a")
				return g
			},
			wantErr: `children "a1" and "a2" declare the same object *v1.ConfigMap /x in member cluster a`,
		},
		"an external node in a member": {
			graph: func() *Graph {
				g := New()
				AddExternal(g, "db", newStore(), "db-1", "v").InCluster("a")
				return g
			},
			wantErr: `external node "db": InCluster is for cluster children`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.graph().Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("Validate() = nil, want %q", tc.wantErr)
			case tc.wantErr != "":
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("Validate() = %q, want it to contain %q", err, tc.wantErr)
				}
				if !errors.Is(err, ErrInvalidGraph) {
					t.Errorf("Validate() = %v, does not wrap ErrInvalidGraph", err)
				}
			}
		})
	}
}

func TestGraphValidateDeterministic(t *testing.T) {
	// Two cycles: the one reached first in declaration order is reported, every time.
	for range 20 {
		err := graphOf("p:q", "q:p", "a:b", "b:a").Validate()
		if err == nil || !strings.Contains(err.Error(), "p -> q -> p") {
			t.Fatalf("Validate() = %v, want the cycle p -> q -> p", err)
		}
	}
}

func TestGraphOrderAndLayers(t *testing.T) {
	cases := map[string]struct {
		graph      *Graph
		wantOrder  []string
		wantLayers [][]string
	}{
		"independent children keep declaration order": {
			graph:      graphOf("c", "a", "b"),
			wantOrder:  []string{"c", "a", "b"},
			wantLayers: [][]string{{"c", "a", "b"}},
		},
		"dependencies first even when declared later": {
			graph:      graphOf("service:deployment", "deployment:config,secret", "config", "secret"),
			wantOrder:  []string{"config", "secret", "deployment", "service"},
			wantLayers: [][]string{{"config", "secret"}, {"deployment"}, {"service"}},
		},
		"layer is the longest path": {
			graph:      graphOf("a", "b:a", "c:b", "d:a,c", "e:a"),
			wantOrder:  []string{"a", "b", "e", "c", "d"},
			wantLayers: [][]string{{"a"}, {"b", "e"}, {"c"}, {"d"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for range 10 {
				order, err := tc.graph.Order()
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.wantOrder, order); diff != "" {
					t.Fatalf("Order() (-want +got):\n%s", diff)
				}
				layers, err := tc.graph.Layers()
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.wantLayers, layers); diff != "" {
					t.Fatalf("Layers() (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestGraphOrderInvalid(t *testing.T) {
	if _, err := graphOf("a:b", "b:a").Order(); !errors.Is(err, ErrInvalidGraph) {
		t.Fatalf("Order() error = %v, want ErrInvalidGraph", err)
	}
}

func TestGraphTypes(t *testing.T) {
	g := New()
	g.Add("a", cm("a"))
	g.Add("d", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}})
	g.Add("b", cm("b"))
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Thing")
	u.SetName("t")
	g.Add("t", u)
	var got []string
	for _, o := range g.Types() {
		s := strings.TrimPrefix(typeIdentity(o), "*")
		if o.GetName() != "" {
			t.Errorf("Types() returned a non-empty object %s", o.GetName())
		}
		got = append(got, s)
	}
	want := []string{"v1.ConfigMap", "v1.Deployment", "example.com/v1, Kind=Thing"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Types() (-want +got):\n%s", diff)
	}
}

func TestDependsOnDeduplicates(t *testing.T) {
	g := New()
	n := g.Add("a", cm("a")).DependsOn("b", "c").DependsOn("b")
	if diff := cmp.Diff([]string{"b", "c"}, n.Dependencies()); diff != "" {
		t.Errorf("Dependencies() (-want +got):\n%s", diff)
	}
}

// TestInDependencyOrder: every step runs once, after all of its dependencies returned, and steps that
// do not depend on each other run at the same time (each of them waits until all have started: run
// one after the other, they would never finish). The steps a goroutine leaves ready are taken by it.
func TestInDependencyOrder(t *testing.T) {
	tests := []struct {
		name  string
		after [][]int
		// together are steps that must be running at the same time.
		together []int
	}{
		{name: "one", after: [][]int{nil}},
		{name: "chain", after: [][]int{nil, {0}, {1}, {2}}},
		{name: "two roots", after: [][]int{nil, nil}, together: []int{0, 1}},
		{name: "fan out", after: [][]int{nil, {0}, {0}, {0}}, together: []int{1, 2, 3}},
		{name: "diamond", after: [][]int{nil, {0}, {0}, {1, 2}}, together: []int{1, 2}},
		{name: "welcome", after: [][]int{nil, {0}, nil}, together: []int{0, 2}},
		{name: "repeated dependency", after: [][]int{nil, {0, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu       sync.Mutex
				done     = make([]int, len(tt.after)) // how many times each step returned
				late     []string
				started  = map[int]bool{}
				allStart = make(chan struct{})
			)
			step := func(i int) {
				mu.Lock()
				for _, j := range tt.after[i] {
					if done[j] == 0 {
						late = append(late, fmt.Sprintf("%d before its dependency %d", i, j))
					}
				}
				if slices.Contains(tt.together, i) {
					started[i] = true
					if len(started) == len(tt.together) {
						close(allStart)
					}
				}
				mu.Unlock()
				if slices.Contains(tt.together, i) {
					select {
					case <-allStart:
					case <-time.After(10 * time.Second):
						mu.Lock()
						late = append(late, fmt.Sprintf("%d never saw %v running beside it", i, tt.together))
						mu.Unlock()
					}
				}
				mu.Lock()
				done[i]++
				mu.Unlock()
			}
			inDependencyOrder(tt.after, step)
			want := make([]int, len(tt.after))
			for i := range want {
				want[i] = 1
			}
			if diff := cmp.Diff(want, done); diff != "" {
				t.Errorf("times each step ran (-want +got):\n%s", diff)
			}
			if len(late) > 0 {
				t.Error(strings.Join(late, "; "))
			}
		})
	}
}
