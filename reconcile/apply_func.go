package reconcile

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// ApplyFunc is a CreateOrUpdate-style entry point for code migrating from controllerutil, with
// Apply's guarantees (no spurious writes, no claimed defaults, never stealing).
//
// Unlike controllerutil.CreateOrUpdate, mutate does not see the live object: obj is reset to an
// empty object holding only its name and namespace, mutate sets what the operator wants, and the
// result is applied as the desired object. Afterwards obj holds the live object. So write
// mutate as "set what you want", never as "read what is there".
func (a *Applier) ApplyFunc(ctx context.Context, owner, obj client.Object, mutate func() error) (Operation, error) {
	gvk, err := apiutil.GVKForObject(obj, a.scheme)
	if err != nil {
		return "", fmt.Errorf("apply %T %s: %w", obj, obj.GetName(), err)
	}
	key := client.ObjectKeyFromObject(obj)
	empty, err := newObjectLike(obj, gvk)
	if err != nil {
		return "", fmt.Errorf("apply %s: %w", describe(gvk, key), err)
	}
	empty.SetName(key.Name)
	empty.SetNamespace(key.Namespace)
	if err := copyInto(obj, empty); err != nil {
		return "", fmt.Errorf("apply %s: %w", describe(gvk, key), err)
	}
	if mutate != nil {
		if err := mutate(); err != nil {
			return "", fmt.Errorf("apply %s: mutate: %w", describe(gvk, key), err)
		}
	}
	if got := client.ObjectKeyFromObject(obj); got != key {
		return "", fmt.Errorf("apply %s: mutate changed the object's name or namespace to %s", describe(gvk, key), got)
	}
	live, op, err := a.ApplyAndGet(ctx, owner, obj)
	if err != nil {
		return op, err
	}
	if live != nil {
		if err := copyInto(obj, live); err != nil {
			return op, fmt.Errorf("apply %s: %w", describe(gvk, key), err)
		}
	}
	return op, nil
}

// copyInto overwrites dst with src, two objects of the same type.
func copyInto(dst, src client.Object) error {
	if du, ok := dst.(*unstructured.Unstructured); ok {
		su, ok := src.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("cannot copy %T into %T", src, dst)
		}
		du.Object = su.DeepCopy().Object
		return nil
	}
	dv, sv := reflect.ValueOf(dst), reflect.ValueOf(src)
	if dv.Type() != sv.Type() || dv.Kind() != reflect.Pointer {
		return fmt.Errorf("cannot copy %T into %T", src, dst)
	}
	dv.Elem().Set(reflect.ValueOf(src.DeepCopyObject()).Elem())
	return nil
}
