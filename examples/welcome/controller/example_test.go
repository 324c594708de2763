package controller_test

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/welcome/controller"
)

// Children turns a Welcome into a graph: the page, the Deployment that mounts it, then the Service.
// The password only appears as a reference to the Secret.
func ExampleChildren() {
	w := &v1alpha1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "alice"},
		Spec: v1alpha1.WelcomeSpec{
			Name: "Alice", Image: "welcome:1", Replicas: ptr.To[int32](2), Port: 8088, ServiceType: corev1.ServiceTypeClusterIP,
			PasswordSecretRef: &v1alpha1.SecretKeyRef{Name: "alice-password", Key: "password"},
		},
	}
	secret := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "alice-password", ResourceVersion: "42"}}
	g, err := controller.Children(w, secret)
	if err != nil {
		panic(err)
	}
	layers, err := g.Layers()
	if err != nil {
		panic(err)
	}
	for i, l := range layers {
		fmt.Printf("layer %d: %s\n", i, strings.Join(l, ", "))
	}
	for _, n := range g.Nodes() {
		if d, ok := n.Object().(*appsv1.Deployment); ok {
			for _, e := range d.Spec.Template.Spec.Containers[0].Env {
				if e.ValueFrom != nil {
					fmt.Printf("%s from secret %s key %s\n", e.Name, e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
				} else {
					fmt.Printf("%s=%s\n", e.Name, e.Value)
				}
			}
		}
	}
	// Output:
	// layer 0: page, service
	// layer 1: deployment
	// NAME=Alice
	// PORT=8088
	// PAGE_FILE=/etc/welcome/page.html
	// PASSWORD from secret alice-password key password
}

// RenderPage escapes every value it puts on the page.
func ExampleRenderPage() {
	page, err := controller.RenderPage(v1alpha1.WelcomeSpec{
		Email:  "alice@example.com",
		Groups: []string{"admins", "dev"},
		UserID: ptr.To[int64](1000),
	})
	if err != nil {
		panic(err)
	}
	fmt.Print(page)
	// Output:
	// <dl class="profile">
	// <dt>E-mail</dt><dd><a href="mailto:alice@example.com">alice@example.com</a></dd>
	// <dt>Groups</dt><dd>admins, dev</dd>
	// <dt>User ID</dt><dd>1000</dd>
	// </dl>
}
