package status_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/status"
)

func printConditions(obj status.Object) {
	for _, c := range obj.GetConditions() {
		fmt.Printf("  %s=%s %s %q (generation %d)\n", c.Type, c.Status, c.Reason, c.Message, c.ObservedGeneration)
	}
}

func ExampleMarkReady() {
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Generation: 2}}

	status.MarkReconciling(w, "Progressing", "waiting for the database")
	fmt.Println("reconciling:")
	printConditions(w)

	changed := status.MarkReady(w, "Succeeded", "all children ready")
	fmt.Println("ready:", changed, status.IsReady(w))
	printConditions(w)

	fmt.Println("again:", status.MarkReady(w, "Succeeded", "all children ready"))
	fmt.Println("status.observedGeneration:", w.Status.ObservedGeneration)
	// Output:
	// reconciling:
	//   Reconciling=True Progressing "waiting for the database" (generation 2)
	//   Ready=False Progressing "waiting for the database" (generation 2)
	// ready: true true
	//   Ready=True Succeeded "all children ready" (generation 2)
	// again: false
	// status.observedGeneration: 2
}

func ExampleMarkStalled() {
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Generation: 1}}
	status.MarkReconciling(w, "Progressing", "")
	status.MarkStalled(w, "InvalidSpec", "replicas must be at most 10")
	printConditions(w)
	fmt.Println("stalled:", meta.IsStatusConditionTrue(w.GetConditions(), status.Stalled), "reconciling:", meta.IsStatusConditionTrue(w.GetConditions(), status.Reconciling))
	// Output:
	//   Ready=False InvalidSpec "replicas must be at most 10" (generation 1)
	//   Stalled=True InvalidSpec "replicas must be at most 10" (generation 1)
	// stalled: true reconciling: false
}

func ExampleSummarize() {
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Generation: 1}}
	s := status.Summary{Conditions: []string{"Available", "ConfigSynced"}, NegativePolarity: []string{"Degraded"}}

	status.Set(w, metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: "MinimumReplicas", Message: "3 of 3 replicas"})
	status.Summarize(w, s)
	fmt.Println(meta.FindStatusCondition(w.GetConditions(), status.Ready).Status, meta.FindStatusCondition(w.GetConditions(), status.Ready).Message)

	status.Set(w, metav1.Condition{Type: "ConfigSynced", Status: metav1.ConditionTrue, Reason: "Applied"})
	status.Set(w, metav1.Condition{Type: "Degraded", Status: metav1.ConditionTrue, Reason: "DiskPressure", Message: fmt.Sprintf("disk %d%% full", 97)})
	status.Summarize(w, s)
	fmt.Println(meta.FindStatusCondition(w.GetConditions(), status.Ready).Status, meta.FindStatusCondition(w.GetConditions(), status.Ready).Message)

	status.Set(w, metav1.Condition{Type: "Degraded", Status: metav1.ConditionFalse, Reason: "Healthy"})
	status.Summarize(w, s)
	fmt.Println(meta.FindStatusCondition(w.GetConditions(), status.Ready).Status, meta.FindStatusCondition(w.GetConditions(), status.Ready).Message)
	// Output:
	// Unknown ConfigSynced: not reported yet
	// False Degraded: disk 97% full
	// True all conditions are ready
}

func ExamplePatcher_Patch() {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = testapi.AddToScheme(scheme)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "default", Generation: 1}}
	patches := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(w).WithStatusSubresource(w).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				patches++
				data, _ := p.Data(obj)
				fmt.Printf("patch %s\n", data)
				return c.SubResource(sub).Patch(ctx, obj, p, opts...)
			},
		}).Build()
	p := status.NewPatcher(c)

	_ = c.Get(ctx, client.ObjectKeyFromObject(w), w)
	before := w.DeepCopy()
	w.Status.Summary = "3 replicas"
	wrote, err := p.Patch(ctx, w, before)
	fmt.Println("wrote:", wrote, err)

	// Nothing changed: no request at all.
	before = w.DeepCopy()
	w.Status.Summary = "3 replicas"
	wrote, err = p.Patch(ctx, w, before)
	fmt.Println("wrote:", wrote, err, "patches:", patches)
	// Output:
	// patch {"metadata":{"resourceVersion":"999"},"status":{"summary":"3 replicas"}}
	// wrote: true <nil>
	// wrote: false <nil> patches: 1
}
