package fakes

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ApplyPatch sends patch, a server-side apply patch given as bytes (client.RawPatch with
// types.ApplyPatchType, as apply.Applier sends its applies), through c's Apply with the patch
// options' field manager and force, and decodes the answer into obj. controller-runtime's fake client
// stores an object applied through Patch without a resourceVersion; through Apply it stores one, as
// the API server does. A dry run goes to c's Patch instead (the fake's Apply would store it). Client
// sends every apply patch this way; a fake client of your own can do the same in its interceptor:
//
//	interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
//		if patch.Type() == types.ApplyPatchType {
//			return fakes.ApplyPatch(ctx, c, obj, patch, opts...)
//		}
//		return c.Patch(ctx, obj, patch, opts...)
//	}}
func ApplyPatch(ctx context.Context, c client.Client, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if patch.Type() != types.ApplyPatchType {
		return fmt.Errorf("apply patch: patch of type %s, want %s", patch.Type(), types.ApplyPatchType)
	}
	po := &client.PatchOptions{}
	po.ApplyOptions(opts)
	if len(po.DryRun) > 0 {
		return c.Patch(ctx, obj, patch, opts...)
	}
	data, err := patch.Data(obj)
	if err != nil {
		return fmt.Errorf("apply patch: %w", err)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(data, &u.Object); err != nil {
		return fmt.Errorf("apply patch: decode body: %w", err)
	}
	var ao []client.ApplyOption
	if po.FieldManager != "" {
		ao = append(ao, client.FieldOwner(po.FieldManager))
	}
	if ptr.Deref(po.Force, false) {
		ao = append(ao, client.ForceOwnership)
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), ao...); err != nil {
		return err
	}
	if out, ok := obj.(*unstructured.Unstructured); ok {
		out.Object = u.Object
		return nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return fmt.Errorf("apply patch: decode answer into %T: %w", obj, err)
	}
	return nil
}
