package expert_test

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
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/convergo-dev/convergo/bench/expert"
	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
)

// The first pass creates the three children and writes the status; once the Deployment has rolled
// out, the next pass reports Ready; a pass with nothing new writes nothing. (The fake client stands in
// for the manager's client; the bench runs the expert on a real cluster.)
func ExampleReconciler_Reconcile() {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	w := &v1alpha1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: "default", UID: types.UID("1234")},
		Spec:       v1alpha1.WelcomeSpec{Name: "Alice", Image: v1alpha1.DefaultImage, Port: 8088, ServiceType: corev1.ServiceTypeClusterIP},
	}
	writes := 0
	count := func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		writes++
		return c.Patch(ctx, obj, patch, opts...)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(w).
		WithStatusSubresource(&v1alpha1.Welcome{}, &appsv1.Deployment{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				writes++
				return c.Create(ctx, obj, opts...)
			},
			Patch: count,
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				writes++
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	r := &expert.Reconciler{Client: c, Scheme: scheme}
	key := client.ObjectKeyFromObject(w)
	reconcile := func(pass string) {
		writes = 0
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
		if err != nil {
			fmt.Println(err)
			return
		}
		_ = c.Get(ctx, key, w)
		ready := meta.FindStatusCondition(w.Status.Conditions, expert.ConditionReady)
		fmt.Printf("%s: %d writes, requeue: %v, Ready: %s %s\n", pass, writes, !res.IsZero(), ready.Status, ready.Reason)
	}

	reconcile("first pass")
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &appsv1.Deployment{}, &corev1.Service{}} {
		_ = c.Get(ctx, key, obj)
		fmt.Printf("%T controlled by the Welcome: %v\n", obj, metav1.IsControlledBy(obj, w))
	}
	fmt.Println("finalizers:", len(w.Finalizers))

	// Play the Deployment controller: the one replica is updated and available.
	dep := &appsv1.Deployment{}
	_ = c.Get(ctx, key, dep)
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	_ = c.Status().Update(ctx, dep)
	reconcile("rolled out")
	reconcile("again")
	// Output:
	// first pass: 4 writes, requeue: false, Ready: False Progressing
	// *v1.ConfigMap controlled by the Welcome: true
	// *v1.Deployment controlled by the Welcome: true
	// *v1.Service controlled by the Welcome: true
	// finalizers: 0
	// rolled out: 1 writes, requeue: false, Ready: True Available
	// again: 0 writes, requeue: false, Ready: True Available
}

// CacheOptions makes the manager's cache drop managedFields, which the expert never reads.
func ExampleCacheOptions() {
	opts := ctrl.Options{}
	expert.CacheOptions(&opts.Cache)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name:          "alice",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "welcome-expert", Operation: metav1.ManagedFieldsOperationUpdate}},
	}}
	out, err := opts.Cache.DefaultTransform(cm)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("managedFields in the cache:", len(out.(*corev1.ConfigMap).ManagedFields))
	// Output:
	// managedFields in the cache: 0
}
