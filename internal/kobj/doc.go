// Package kobj holds the small helpers on client.Object that several library packages need (status,
// finalizer and reconcile, which must not import each other): one way to name an object in errors and
// logs, and typed copies for reading responses into.
//
//	out := kobj.NewLike(obj) // empty *T carrying obj's kind, name and namespace
//	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), out); err != nil {
//		return fmt.Errorf("read %s: %w", kobj.Describe(obj), err) // "read Widget ns/w: ..."
//	}
//	kobj.CopyInto(obj, out)
//
// It is internal: nothing here is part of Convergo's API.
package kobj
