package ownership_test

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/convergo-dev/convergo/ownership"
)

func ExampleSetController() {
	scheme := clientgoscheme.Scheme
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-web"}}
	config := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-config"}}

	if err := ownership.SetController(web, config, scheme); err != nil {
		fmt.Println(err)
	}
	fmt.Println("controlled by web:", ownership.IsControlledBy(config, web))

	// Another owner never takes the child over.
	api := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api", UID: "uid-api"}}
	err := ownership.SetController(api, config, scheme)
	var owned *ownership.AlreadyOwnedError
	fmt.Println(errors.As(err, &owned), owned.Current.Name)

	// Kubernetes cannot express a namespaced owner of a cluster-scoped child.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "shop-web"}}
	err = ownership.SetController(web, role, scheme)
	fmt.Println(errors.Is(err, ownership.ErrClusterScopedChild))
	// Output:
	// controlled by web: true
	// true web
	// true
}

func ExampleTrack() {
	scheme := clientgoscheme.Scheme
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-web"}}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "shop-web"}}

	if err := ownership.Track(web, role, scheme); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(role.Labels[ownership.OwnerUIDLabel])
	owner, ok := ownership.TrackedOwner(role)
	fmt.Println(ok, owner)
	// Output:
	// uid-web
	// true Deployment.apps shop/web (uid uid-web)
}
