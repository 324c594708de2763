package applytest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/convergo-dev/convergo/testing/fakes"
)

// Scheme returns a scheme of client-go's built-in types.
func Scheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// Mapper returns a REST mapper that knows ConfigMaps, Secrets, Services, Deployments (namespaced),
// Namespaces and ClusterRoles (cluster-scoped).
func Mapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Service"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, meta.RESTScopeRoot)
	return m
}

// WriteCounter counts the fake client's writes; a graph applies independent children concurrently,
// so the count is guarded (read it once the walk returned).
type WriteCounter struct {
	mu sync.Mutex
	// N is the number of writes.
	N int
}

func (w *WriteCounter) inc() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.N++
}

// Funcs returns interceptor functions that count each write.
func (w *WriteCounter) Funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			w.inc()
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			w.inc()
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			w.inc()
			return GuardedPatch(ctx, c, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			w.inc()
			return c.Delete(ctx, obj, opts...)
		},
	}
}

// NewFake returns a fake client holding objs whose writes w counts (when not nil). Its server-side
// apply honours the guards the Applier sends as the API server does (proven on the real server by
// TestIntegrationApplyGuards): metadata.resourceVersion makes an apply fail with a conflict unless the
// object has that version (so "1" means create only), metadata.uid unless the object has that UID.
func NewFake(t testing.TB, w *WriteCounter, objs ...client.Object) client.WithWatch {
	t.Helper()
	b := fake.NewClientBuilder().WithScheme(Scheme(t)).WithRESTMapper(Mapper()).WithObjects(objs...)
	if w == nil {
		w = &WriteCounter{}
	}
	return b.WithInterceptorFuncs(w.Funcs()).Build()
}

// GuardedPatch sends patch through c, and an apply patch as the API server handles one with a
// resourceVersion or UID in it (through the fake's Apply, see fakes.ApplyPatch).
func GuardedPatch(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	body, err := ApplyBody(obj, patch)
	switch {
	case err != nil:
		return err
	case body == nil:
		return c.Patch(ctx, obj, patch, opts...)
	}
	md, _ := body["metadata"].(map[string]any)
	rv, _ := md["resourceVersion"].(string)
	uid, _ := md["uid"].(string)
	delete(md, "resourceVersion")
	delete(md, "uid")
	if rv != "" || uid != "" {
		live := &unstructured.Unstructured{Object: map[string]any{"apiVersion": body["apiVersion"], "kind": body["kind"]}}
		name, _ := md["name"].(string)
		ns, _ := md["namespace"].(string)
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, live)
		gr := schema.GroupResource{Resource: "objects"}
		switch {
		case err != nil && !apierrors.IsNotFound(err):
			return err
		case rv != "" && err == nil && (live.GetResourceVersion() != rv || rv == "1"): // no real object has version 1
			return apierrors.NewConflict(gr, name, errors.New("the object has been modified"))
		case uid != "" && apierrors.IsNotFound(err):
			return apierrors.NewConflict(gr, name, errors.New("uid mismatch: the provided object specified uid "+uid+", and no existing object was found"))
		case uid != "" && string(live.GetUID()) != uid:
			return apierrors.NewInvalid(schema.GroupKind{Kind: "Object"}, name, field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), uid, "field is immutable")})
		}
	}
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return fakes.ApplyPatch(ctx, c, obj, client.RawPatch(types.ApplyPatchType, data), opts...)
}

// ApplyBody returns the body of patch, an apply patch of obj; nil for any other patch.
func ApplyBody(obj client.Object, patch client.Patch) (map[string]any, error) {
	if patch.Type() != types.ApplyPatchType {
		return nil, nil
	}
	data, err := patch.Data(obj)
	if err != nil {
		return nil, err
	}
	var body map[string]any
	if err := json.Unmarshal(data, &body); err != nil {
		return nil, err
	}
	return body, nil
}

// Owner returns an owner object in namespace ns with UID uid-<name>.
func Owner(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)}}
}

// DesiredCM returns a desired ConfigMap named child holding data.
func DesiredCM(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child"}, Data: data}
}
