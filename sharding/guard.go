package sharding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrCannotWrite is wrapped by a guarded client's errors once the member may no longer write: its
// Lease was not renewed within the renew deadline (another replica may take its objects over soon), or
// the shard stopped and released its Lease. The message names which. The write is not sent.
var ErrCannotWrite = errors.New("this replica may not write")

// Client returns c whose writes (create, update, patch, apply, delete, and the same on subresources
// such as status) fail with ErrCannotWrite, unsent, once the member may no longer write. Reads pass.
func (s *Shard) Client(c client.Client) client.Client { return guarded{Client: c, s: s} }

// Writable returns nil while the member may write, an error wrapping ErrCannotWrite otherwise. A
// stopping shard admits no new reconcile (Begin), but the reconciles it admitted write on until they
// end or the renew deadline passes, while it still renews its Lease; then it releases the Lease and
// refuses every write.
func (s *Shard) Writable() error {
	s.mu.Lock()
	released := s.released
	s.mu.Unlock()
	switch {
	case released:
		return fmt.Errorf("member %s of ring %s stopped and released its Lease (a reconcile still running had the renew deadline to finish): %w",
			s.cfg.Member, s.cfg.Ring, ErrCannotWrite)
	case !s.member.CanWrite():
		return fmt.Errorf("member %s of ring %s: its Lease was not renewed within the renew deadline, so another replica may take its objects over: %w",
			s.cfg.Member, s.cfg.Ring, ErrCannotWrite)
	}
	return nil
}

type guarded struct {
	client.Client
	s *Shard
}

func (g guarded) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := g.s.Writable(); err != nil {
		return err
	}
	return g.Client.Create(ctx, obj, opts...)
}

func (g guarded) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := g.s.Writable(); err != nil {
		return err
	}
	return g.Client.Update(ctx, obj, opts...)
}

func (g guarded) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := g.s.Writable(); err != nil {
		return err
	}
	return g.Client.Patch(ctx, obj, patch, opts...)
}

func (g guarded) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	if err := g.s.Writable(); err != nil {
		return err
	}
	return g.Client.Apply(ctx, obj, opts...)
}

func (g guarded) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := g.s.Writable(); err != nil {
		return err
	}
	return g.Client.Delete(ctx, obj, opts...)
}

func (g guarded) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	if err := g.s.Writable(); err != nil {
		return err
	}
	return g.Client.DeleteAllOf(ctx, obj, opts...)
}

func (g guarded) Status() client.SubResourceWriter { return g.SubResource("status") }

func (g guarded) SubResource(name string) client.SubResourceClient {
	return guardedSub{SubResourceClient: g.Client.SubResource(name), s: g.s}
}

type guardedSub struct {
	client.SubResourceClient
	s *Shard
}

func (g guardedSub) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	if err := g.s.Writable(); err != nil {
		return err
	}
	return g.SubResourceClient.Create(ctx, obj, sub, opts...)
}

func (g guardedSub) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := g.s.Writable(); err != nil {
		return err
	}
	return g.SubResourceClient.Update(ctx, obj, opts...)
}

func (g guardedSub) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := g.s.Writable(); err != nil {
		return err
	}
	return g.SubResourceClient.Patch(ctx, obj, patch, opts...)
}

func (g guardedSub) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	if err := g.s.Writable(); err != nil {
		return err
	}
	return g.SubResourceClient.Apply(ctx, obj, opts...)
}

// labelPatch is the JSON merge patch that sets the shard label key to member and
// MovedFromAnnotation to from (removed when from is empty), under resourceVersion when it is set.
func labelPatch(key, member, from, resourceVersion string) ([]byte, error) {
	md := map[string]any{"labels": map[string]any{key: member}}
	if from != "" {
		md["annotations"] = map[string]any{MovedFromAnnotation: from}
	} else {
		md["annotations"] = map[string]any{MovedFromAnnotation: nil}
	}
	if resourceVersion != "" {
		md["resourceVersion"] = resourceVersion
	}
	data, err := json.Marshal(map[string]any{"metadata": md})
	if err != nil {
		return nil, fmt.Errorf("label patch: %w", err)
	}
	return data, nil
}
