package apply

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// scopeCountingClient counts the client's scope lookups.
type scopeCountingClient struct {
	client.Client
	lookups int
}

func (c *scopeCountingClient) IsObjectNamespaced(obj runtime.Object) (bool, error) {
	c.lookups++
	return c.Client.IsObjectNamespaced(obj)
}

// TestApplierScopeAskedOncePerKind: whether a kind is namespaced is asked of the REST mapper once; a
// kind it does not know is asked again each time (its CRD may come) and judged by the namespaces.
func TestApplierScopeAskedOncePerKind(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), meta.RESTScopeRoot)
	c := &scopeCountingClient{Client: fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithRESTMapper(mapper).Build()}
	a := NewApplier(c, c)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "ns"}}
	type answer struct {
		Namespaced bool
		Lookups    int
	}
	var got []answer
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &corev1.ConfigMap{}, &rbacv1.ClusterRole{}, &rbacv1.ClusterRole{}, &corev1.Secret{}, &corev1.Secret{}} {
		gvk, err := apiutil.GVKForObject(obj, clientgoscheme.Scheme)
		if err != nil {
			t.Fatal(err)
		}
		ns, err := a.namespaced(obj, owner, gvk)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, answer{ns, c.lookups})
	}
	want := []answer{{true, 1}, {true, 1}, {false, 2}, {false, 2}, {true, 3}, {true, 4}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("namespaced, lookups so far (-want +got):\n%s", diff)
	}
}
