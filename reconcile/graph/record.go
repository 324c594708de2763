package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/convergo-dev/convergo/internal/marks"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/internal/seam"
)

// ExternalRecord is one external object recorded on an owner (marks.External).
type ExternalRecord struct {
	// Node is the node that declared it.
	Node string `json:"node"`
	// Kind is its External's Kind.
	Kind string `json:"kind"`
	// ID is its identity.
	ID string `json:"id"`
	// Keep: it is kept (KeepOnDelete), released instead of deleted.
	Keep bool `json:"keep,omitempty"`
	// DependsOn names the nodes its node depends on, comma-separated as in marks.DependsOn, for
	// DeleteByMarks to delete it in order without the graph.
	DependsOn string `json:"dependsOn,omitempty"`
}

// RecordedExternal returns the external objects recorded on owner, for tools that read live objects
// (kubectl convergo tree); an annotation that is not the graph's list is an error.
func RecordedExternal(owner client.Object) ([]ExternalRecord, error) { return readRecord(owner) }

// record is an owner's marks.External, read once per Graph call and written through the Applier's
// client (a merge patch of the owner's annotations, guarded by its resourceVersion). The owner's
// annotations and resourceVersion are updated in place with every write; nothing else of it is
// touched, so other steps may read the owner meanwhile.
type record struct {
	mu      sync.Mutex
	a       *apply.Applier
	owner   client.Object
	entries []ExternalRecord
	err     error
}

// newRecord reads owner's record.
func newRecord(a *apply.Applier, owner client.Object) *record {
	r := &record{a: a, owner: owner}
	r.entries, r.err = readRecord(owner)
	return r
}

// readRecord decodes owner's marks.External.
func readRecord(owner client.Object) ([]ExternalRecord, error) {
	v, ok := owner.GetAnnotations()[marks.External]
	if !ok || v == "" {
		return nil, nil
	}
	var entries []ExternalRecord
	if err := json.Unmarshal([]byte(v), &entries); err != nil {
		return nil, fmt.Errorf("annotation %s of the owner is not the list the graph writes (%w): restore it from the owner's history; removing it would leave its external objects unmanaged", marks.External, err)
	}
	return entries, nil
}

// mark is the owner mark of the owner's external objects: its UID.
func (r *record) mark() string { return string(r.owner.GetUID()) }

// owns reports whether the observed object id of kind is the owner's: it carries the owner's mark, or
// no mark and the record names it.
func (r *record) owns(obs Observation, kind, id string) bool {
	return obs.Owner == r.mark() || obs.Owner == "" && r.has(kind, id)
}

// has reports whether the record names the object id of kind.
func (r *record) has(kind, id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.find(kind, id) >= 0
}

// holds reports whether the record holds e as it is.
func (r *record) holds(e ExternalRecord) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := r.find(e.Kind, e.ID)
	return i >= 0 && r.entries[i] == e
}

func (r *record) find(kind, id string) int {
	return slices.IndexFunc(r.entries, func(e ExternalRecord) bool { return e.Kind == kind && e.ID == id })
}

// list returns a copy of the entries.
func (r *record) list() []ExternalRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.entries)
}

// add records e (replacing the entry of the same object) and writes the record; it writes nothing when
// the record holds e already.
func (r *record) add(ctx context.Context, e ExternalRecord) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	next := slices.Clone(r.entries)
	if i := r.find(e.Kind, e.ID); i >= 0 {
		if next[i] == e {
			return nil
		}
		next[i] = e
	} else {
		next = append(next, e)
	}
	return r.write(ctx, next)
}

// remove drops the entry of the object id of kind and writes the record.
func (r *record) remove(ctx context.Context, kind, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	i := r.find(kind, id)
	if i < 0 {
		return nil
	}
	return r.write(ctx, slices.Delete(slices.Clone(r.entries), i, i+1))
}

// write patches the owner's marks.External to entries (removes it when empty), guarded by the
// owner's resourceVersion, and updates the owner's annotations and resourceVersion. Called with r.mu
// held.
func (r *record) write(ctx context.Context, entries []ExternalRecord) error {
	if err := seam.Of(r.a).MayWrite(); err != nil {
		return err
	}
	var value any // nil removes the annotation
	if len(entries) > 0 {
		b, err := json.Marshal(entries)
		if err != nil {
			return fmt.Errorf("encode %s: %w", marks.External, err)
		}
		value = string(b)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": r.owner.GetResourceVersion(),
		"annotations":     map[string]any{marks.External: value},
	}})
	if err != nil {
		return fmt.Errorf("encode %s patch: %w", marks.External, err)
	}
	written, ok := r.owner.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copy of %T is not a client.Object: generate DeepCopyObject for the type", r.owner)
	}
	rvBefore := r.owner.GetResourceVersion()
	if err := r.a.Client().Patch(ctx, written, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("write %s on the owner: %w", marks.External, err)
	}
	if gvk, err := apiutil.GVKForObject(r.owner, r.a.Scheme()); err == nil {
		seam.Of(r.a).RememberWrite(gvk.GroupKind(), rvBefore, written)
	}
	r.owner.SetAnnotations(maps.Clone(written.GetAnnotations()))
	r.owner.SetResourceVersion(written.GetResourceVersion())
	r.entries = entries
	return nil
}
