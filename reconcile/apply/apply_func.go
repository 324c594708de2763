package apply

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/convergo-dev/convergo/internal/kobj"
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
	if err := kobj.CopyInto(obj, kobj.NewLike(obj)); err != nil {
		return "", fmt.Errorf("apply %s: %w", kobj.DescribeKey(gvk.Kind, key), err)
	}
	if mutate != nil {
		if err := mutate(); err != nil {
			return "", fmt.Errorf("apply %s: mutate: %w", kobj.DescribeKey(gvk.Kind, key), err)
		}
	}
	if got := client.ObjectKeyFromObject(obj); got != key {
		return "", fmt.Errorf("apply %s: mutate changed the object's name or namespace to %s", kobj.DescribeKey(gvk.Kind, key), got)
	}
	live, op, err := a.Apply(ctx, owner, obj)
	if err != nil {
		return op, err
	}
	if live != nil {
		if err := kobj.CopyInto(obj, live); err != nil {
			return op, fmt.Errorf("apply %s: %w", kobj.DescribeKey(gvk.Kind, key), err)
		}
	}
	return op, nil
}
