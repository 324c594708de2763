package graph

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestDueByMarks(t *testing.T) {
	cases := []struct {
		name                string
		children, externals []marked
		want                []bool
	}{
		{name: "nothing", want: []bool{}},
		{
			name:     "a chain of children: only its end is due",
			children: []marked{{node: "a"}, {node: "b", deps: []string{"a"}}, {node: "c", deps: []string{"b"}}},
			want:     []bool{false, false, true},
		},
		{
			name:      "a child holds back the external it depends on, an external the child it depends on",
			children:  []marked{{node: "secret", deps: []string{"db"}}, {node: "password"}},
			externals: []marked{{node: "db", deps: []string{"role"}}, {node: "role", deps: []string{"password"}}},
			want:      []bool{true, false, false, false},
		},
		{
			name:     "children without a node are due; their dependencies still hold",
			children: []marked{{}, {node: "a"}, {deps: []string{"a"}}},
			want:     []bool{true, false, true},
		},
		{
			name:     "two children of one node do not hold each other back",
			children: []marked{{node: "a", deps: []string{"a"}}, {node: "a"}},
			want:     []bool{true, true},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, dueByMarks(tc.children, tc.externals)); diff != "" {
				t.Errorf("dueByMarks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeleteByMarks applies a graph (external role <- external db <- ConfigMap config, and a
// ConfigMap extra that depends on nothing), then deletes it without the graph, by the marks Apply
// left: each pass deletes only what nothing left depends on.
func TestDeleteByMarks(t *testing.T) {
	f := newExternalFixture(t)
	g := New()
	AddExternal(g, "role", f.s, "app-role", "v1")
	AddExternal(g, "db", f.s, "app-db", "v1").DependsOn("role")
	g.Add("config", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config"}}).DependsOn("db")
	g.Add("extra", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-extra"}})
	for range 3 { // role, then db, then config become ready
		if _, err := g.Apply(t.Context(), f.a, f.owner); err != nil {
			t.Fatal(err)
		}
	}
	state := func() string {
		var have []string
		for _, name := range []string{"app-extra", "app-config"} {
			if err := f.c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: name}, &corev1.ConfigMap{}); err == nil {
				have = append(have, name)
			}
		}
		for _, id := range []string{"app-db", "app-role"} {
			if _, ok := f.s.get(id); ok {
				have = append(have, id)
			}
		}
		return strings.Join(have, ",")
	}
	if got := state(); got != "app-extra,app-config,app-db,app-role" {
		t.Fatalf("after Apply: %s", got)
	}

	t.Run("without the external kinds", func(t *testing.T) {
		res, err := New().DeleteByMarks(t.Context(), f.a, f.owner, &corev1.ConfigMap{})
		var nodeErr *NodeError
		if !errors.As(err, &nodeErr) || nodeErr.Step != StepDelete || !strings.Contains(err.Error(), `kind "mem.thing" is unknown`) {
			t.Fatalf("DeleteByMarks without WithExternalKinds: %v, want a delete NodeError naming kind mem.thing", err)
		}
		if res.Done {
			t.Error("Done with external objects left")
		}
		if got := state(); got != "app-db,app-role" {
			t.Errorf("after a pass without the external kinds: %s left, want app-db,app-role", got)
		}
	})

	var passes []string
	for range 5 {
		res, err := New(WithExternalKinds(f.s)).DeleteByMarks(t.Context(), f.a, f.owner, &corev1.ConfigMap{})
		if err != nil {
			t.Fatal(err)
		}
		passes = append(passes, fmt.Sprintf("done=%v left=%s", res.Done, state()))
		if res.Done {
			break
		}
	}
	// The first pass (above, without the kinds) deleted the ConfigMaps already: the record's errors do
	// not hold back the cluster children.
	want := []string{"done=false left=app-role", "done=true left="}
	if diff := cmp.Diff(want, passes); diff != "" {
		t.Errorf("deletion passes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]ExternalRecord(nil), f.recorded(t)); diff != "" {
		t.Errorf("record after the deletion (-want +got):\n%s", diff)
	}
}
