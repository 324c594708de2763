package reconcile

import (
	"context"
	"fmt"
	"reflect"

	"github.com/convergo-dev/convergo/status"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// reference is a WithReferences declaration.
type reference struct {
	obj   client.Object
	owner reflect.Type
	names func(client.Object) []string
}

// WithReferences wakes an object when an object of obj's kind that it names, in its namespace, is
// created, changed or deleted: names returns the names an object refers to (a Secret its spec names,
// say). Objects of obj's kind are watched metadata only (builder.OnlyMetadata), so their data is never
// cached; read one as a metav1.PartialObjectMetadata of that kind to use the same cache. A field index
// of the manager's cache maps a name to the objects naming it. T must be the Reconciler's type. It may
// be given once per kind.
//
//	reconcile.WithReferences(&corev1.Secret{}, func(w *v1alpha1.Welcome) []string { return []string{w.Spec.PasswordSecretRef.Name} })
func WithReferences[T status.Object](obj client.Object, names func(T) []string) ReconcilerOption {
	return func(c *reconcilerConfig) {
		c.references = append(c.references, reference{obj: obj, owner: reflect.TypeFor[T](), names: func(o client.Object) []string {
			if t, ok := o.(T); ok {
				return names(t)
			}
			return nil
		}})
	}
}

// addReferences indexes T by the names each WithReferences finds in it and adds the metadata-only
// watch that maps an event to the objects naming the object.
func (r *Reconciler[T]) addReferences(mgr manager.Manager) error {
	for _, ref := range r.references {
		if typ := reflect.TypeFor[T](); ref.owner != typ {
			return fmt.Errorf("WithReferences(%T) for %v, in a Reconciler of %v", ref.obj, ref.owner, typ)
		}
		gvk, err := apiutil.GVKForObject(ref.obj, r.scheme)
		if err != nil {
			return fmt.Errorf("WithReferences(%T): %w", ref.obj, err)
		}
		list := r.gvk.GroupVersion().WithKind(r.gvk.Kind + "List")
		if !r.scheme.Recognizes(list) {
			return fmt.Errorf("WithReferences(%T): the scheme has no %s to list the objects naming one", ref.obj, list.Kind)
		}
		field := "convergo.dev/references-" + gvk.GroupKind().String()
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), r.newObj(), field, ref.names); err != nil {
			return fmt.Errorf("WithReferences(%T): index %v by the names of %s: %w", ref.obj, r.gvk.Kind, gvk.Kind, err)
		}
		r.watches = append(r.watches, extraWatch{obj: ref.obj, handler: handler.EnqueueRequestsFromMapFunc(r.naming(list, field)), opts: []builder.WatchesOption{builder.OnlyMetadata}})
	}
	return nil
}

// naming returns the map function of a WithReferences watch: the objects of T (listed as list, a
// kind the scheme knows) in the object's namespace whose index field holds its name.
func (r *Reconciler[T]) naming(list schema.GroupVersionKind, field string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []ctrlreconcile.Request {
		fresh, err := r.scheme.New(list)
		objs, ok := fresh.(client.ObjectList)
		if err != nil || !ok {
			loggerOf(ctx).Error(err, "no list type", "kind", list.Kind)
			return nil
		}
		if err := r.cache.List(ctx, objs, client.InNamespace(o.GetNamespace()), client.MatchingFields{field: o.GetName()}); err != nil {
			loggerOf(ctx).Error(err, "list objects naming one", "object", client.ObjectKeyFromObject(o))
			return nil
		}
		var reqs []ctrlreconcile.Request
		_ = meta.EachListItem(objs, func(item runtime.Object) error {
			if m, ok := item.(client.Object); ok {
				reqs = append(reqs, ctrlreconcile.Request{NamespacedName: client.ObjectKeyFromObject(m)})
			}
			return nil
		})
		return reqs
	}
}
