package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
)

// childKinds are the kinds of a Welcome's children.
var childKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "ConfigMap"},
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Version: "v1", Kind: "Service"},
}

// cascadeKinds are the kinds the cluster makes from the Welcomes' Deployments, which the garbage
// collector deletes after them.
var cascadeKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "ReplicaSet"},
	{Version: "v1", Kind: "Pod"},
}

// view is the bench driver's watch on one namespace: the Welcomes and the metadata of ConfigMaps,
// Deployments and Services, through an informer cache on the driver's own (uncounted) config. Waiting
// on it costs the API server one list and one watch per kind instead of a list per poll.
type view struct {
	cache  cache.Cache
	ns     string
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// newView starts a view of namespace ns and returns once its informers have synced.
func newView(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, ns string) (*view, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		return nil, fmt.Errorf("create driver cache: %w", err)
	}
	vctx, cancel := context.WithCancel(ctx)
	v := &view{cache: c, ns: ns, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(v.done)
		v.err = c.Start(vctx)
	}()
	if !c.WaitForCacheSync(vctx) {
		v.stop()
		return nil, errors.New("driver cache did not start")
	}
	objs := []client.Object{&v1alpha1.Welcome{}}
	for _, gvk := range slices.Concat(childKinds, cascadeKinds) {
		objs = append(objs, metadataObject(gvk))
	}
	for _, obj := range objs {
		if _, err := c.GetInformer(vctx, obj); err != nil {
			v.stop()
			return nil, fmt.Errorf("start driver informer for %T: %w", obj, err)
		}
	}
	return v, nil
}

// stop stops the informers and waits for them.
func (v *view) stop() {
	v.cancel()
	<-v.done
}

// welcomes returns the cached Welcomes. They are shared with the cache: read them, never modify.
func (v *view) welcomes(ctx context.Context) ([]v1alpha1.Welcome, error) {
	var list v1alpha1.WelcomeList
	if err := v.cache.List(ctx, &list, client.InNamespace(v.ns), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list welcomes: %w", err)
	}
	return list.Items, nil
}

// children returns how many cached ConfigMaps, Deployments and Services are children of a Welcome.
func (v *view) children(ctx context.Context) (int, error) {
	return v.count(ctx, childKinds, isChild)
}

// cascade returns how many ReplicaSets and Pods the namespace still holds (every one of them comes
// from a Welcome's Deployment: each implementation has a namespace of its own).
func (v *view) cascade(ctx context.Context) (int, error) {
	return v.count(ctx, cascadeKinds, func(metav1.Object) bool { return true })
}

// count returns how many cached objects of kinds in the namespace match.
func (v *view) count(ctx context.Context, kinds []schema.GroupVersionKind, match func(metav1.Object) bool) (int, error) {
	n := 0
	for _, gvk := range kinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := v.cache.List(ctx, list, client.InNamespace(v.ns), client.UnsafeDisableDeepCopy); err != nil {
			return 0, fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			if match(&list.Items[i]) {
				n++
			}
		}
	}
	return n, nil
}

func metadataObject(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	return obj
}

// isChild reports whether obj belongs to a Welcome: it has an owner reference to one, or the
// app.kubernetes.io/name=welcome label both implementations put on their children.
func isChild(obj metav1.Object) bool {
	for _, ref := range obj.GetOwnerReferences() {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil && gv.Group == v1alpha1.GroupVersion.Group && ref.Kind == "Welcome" {
			return true
		}
	}
	return obj.GetLabels()["app.kubernetes.io/name"] == "welcome"
}

// isReady reports whether w is Ready=True for its current generation, and that generation is at least
// minGeneration (the one the driver's last write produced).
func isReady(w *v1alpha1.Welcome, minGeneration int64) bool {
	c := readyFor(w, minGeneration)
	return c != nil && c.Status == metav1.ConditionTrue
}

// isObserved reports whether w has a Ready condition, of any status, for its current generation, and
// that generation is at least minGeneration: its operator has written the status of that generation.
func isObserved(w *v1alpha1.Welcome, minGeneration int64) bool {
	return readyFor(w, minGeneration) != nil
}

// readyFor returns w's Ready condition when it is for w's current generation and that generation is
// at least minGeneration; nil otherwise.
func readyFor(w *v1alpha1.Welcome, minGeneration int64) *metav1.Condition {
	if w.Generation < minGeneration {
		return nil
	}
	if c := meta.FindStatusCondition(w.Status.Conditions, "Ready"); c != nil && c.ObservedGeneration == w.Generation {
		return c
	}
	return nil
}
