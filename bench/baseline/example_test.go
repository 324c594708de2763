package baseline_test

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/convergo-dev/convergo/bench/baseline"
	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
)

// One pass of the baseline creates the three children, writes the status and asks to be requeued,
// the tutorial way. (The fake client stands in for the manager's client; the bench runs it on a real
// cluster.)
func ExampleReconciler_Reconcile() {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	w := &v1alpha1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: "default", UID: types.UID("1234")},
		Spec:       v1alpha1.WelcomeSpec{Name: "Alice", Port: 8088},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(w).WithStatusSubresource(w).Build()
	r := &baseline.Reconciler{Client: c, Scheme: scheme}

	res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("requeue:", res.Requeue) //nolint:staticcheck // the baseline uses it on purpose
	key := client.ObjectKeyFromObject(w)
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &appsv1.Deployment{}, &corev1.Service{}} {
		err := c.Get(ctx, key, obj)
		fmt.Printf("%T exists: %v, controlled by the Welcome: %v\n", obj, err == nil, metav1.IsControlledBy(obj, w))
	}
	_ = c.Get(ctx, key, w)
	ready := meta.FindStatusCondition(w.Status.Conditions, baseline.ConditionReady)
	fmt.Println("Ready:", ready.Status, ready.Reason)
	// Output:
	// requeue: true
	// *v1.ConfigMap exists: true, controlled by the Welcome: true
	// *v1.Deployment exists: true, controlled by the Welcome: true
	// *v1.Service exists: true, controlled by the Welcome: true
	// Ready: False Progressing
}
