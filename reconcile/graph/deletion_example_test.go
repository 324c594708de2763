package graph_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/graph"
)

// A child holding data that must outlive its owner is kept: the choice is recorded on the intent as an
// annotation, the child is tracked by its owner but has no owner reference (the garbage collector never
// deletes it), and when the owner is deleted (or the graph drops the child) it is released: nothing of
// the owner is left on it, and it stays. A child deleted with foreground propagation is gone only after
// its own dependents; Orphan is refused.
func ExampleNode_KeepOnDelete() {
	ctx := context.Background()
	// In an operator: the Reconciler's Applier, on the manager's client.
	c := exampleClient()
	a := apply.NewApplier(c, c, apply.WithFieldManager("example"))
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "1234"}}

	g := graph.New()
	g.Add("data", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-data"}}).KeepOnDelete()
	g.Add("cache", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-cache"}}).
		DependsOn("data").DeletionPropagation(metav1.DeletePropagationForeground)
	for _, n := range g.Nodes() {
		fmt.Println(n.Name(), n.Object().GetAnnotations())
	}

	res, err := g.Apply(ctx, a, owner)
	if err != nil {
		fmt.Println(err)
		return
	}
	data := res.Child("data").Object
	fmt.Println("data: owner references:", len(data.GetOwnerReferences()), "tracked:", ownership.IsTrackedBy(data, owner))

	// On the owner's deletion (the Reconciler calls this until done, then removes its finalizer):
	for done := false; !done; {
		res, err := g.Delete(ctx, a, owner)
		if err != nil {
			fmt.Println(err)
			return
		}
		done = res.Done
	}
	kept := &corev1.ConfigMap{}
	err = c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "app-data"}, kept)
	fmt.Println("data after the owner's deletion: exists:", err == nil, "tracked:", ownership.IsTrackedBy(kept, owner))

	orphan := graph.New()
	orphan.Add("web", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web"}}).DeletionPropagation(metav1.DeletePropagationOrphan)
	fmt.Println(orphan.Validate())
	// Output:
	// data map[convergo.dev/deletion-policy:keep]
	// cache map[convergo.dev/deletion-policy:foreground]
	// data: owner references: 0 tracked: true
	// data after the owner's deletion: exists: true tracked: false
	// invalid child graph: child "web": deletion propagation Orphan is not supported (it would leave the child's own dependents without owner); use KeepOnDelete to keep the child itself
}
