package graph

import (
	"testing"

	"github.com/convergo-dev/convergo/internal/marks"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/internal/applytest"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestGraphApplyRecordsNodes checks that every child Graph.Apply writes names its node and its
// dependencies (sorted), that the desired objects are not modified, and that applying the same graph
// again sends nothing.
func TestGraphApplyRecordsNodes(t *testing.T) {
	c := applytest.NewFake(t, nil)
	a := apply.NewApplier(c, c)
	app := applytest.Owner("app")
	build := func() (*Graph, *corev1.ConfigMap) {
		withOwn := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name:        "web",
			Annotations: map[string]string{"example.com/note": "kept", marks.DependsOn: "replaced"},
		}}
		g := New()
		g.Add("web", withOwn).DependsOn("secrets", "config")
		g.Add("config", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config"}})
		g.Add("secrets", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "secrets"}}).DependsOnForCreation("config")
		return g, withOwn
	}
	g, withOwn := build()
	if _, err := g.Apply(t.Context(), a, app); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]string{}
	for _, name := range []string{"web", "config", "secrets"} {
		cm := &corev1.ConfigMap{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: name}, cm); err != nil {
			t.Fatal(err)
		}
		got[name] = map[string]string{}
		for _, k := range []string{marks.Node, marks.DependsOn, "example.com/note"} {
			if v, ok := cm.Annotations[k]; ok {
				got[name][k] = v
			}
		}
	}
	want := map[string]map[string]string{
		"web":     {marks.Node: "web", marks.DependsOn: "config,secrets", "example.com/note": "kept"},
		"config":  {marks.Node: "config"},
		"secrets": {marks.Node: "secrets", marks.DependsOn: "config"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("annotations of the children (-want +got):\n%s", diff)
	}
	wantOwn := map[string]string{"example.com/note": "kept", marks.DependsOn: "replaced"}
	if diff := cmp.Diff(wantOwn, withOwn.Annotations); diff != "" {
		t.Errorf("Apply modified the desired object's annotations (-want +got):\n%s", diff)
	}

	g, _ = build()
	res, err := g.Apply(t.Context(), a, app)
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed() {
		t.Errorf("second apply of the same graph changed children: %+v", res.Children)
	}
}

// TestGraphApplyAnnotatesExistingChildrenOnce checks the cost of upgrading to a version that writes
// the graph annotations: a child applied without them (as an older Convergo did) is updated once,
// then left alone.
func TestGraphApplyAnnotatesExistingChildrenOnce(t *testing.T) {
	c := applytest.NewFake(t, nil)
	a := apply.NewApplier(c, c)
	app := applytest.Owner("app")
	page := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "page"}, Data: map[string]string{"a": "b"}}
	if _, op, err := a.Apply(t.Context(), app, page); err != nil || op != apply.OperationCreated {
		t.Fatalf("Apply without the graph: %s, %v; want Created", op, err)
	}
	var ops []apply.Operation
	for range 2 {
		g := New()
		g.Add("page", page)
		res, err := g.Apply(t.Context(), a, app)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, res.Child("page").Operation)
	}
	if diff := cmp.Diff([]apply.Operation{apply.OperationUpdated, apply.OperationUnchanged}, ops); diff != "" {
		t.Errorf("operations of two graph applies after an upgrade (-want +got):\n%s", diff)
	}
}
