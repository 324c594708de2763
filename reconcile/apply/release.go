package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/convergo-dev/convergo/internal/kobj"
	"github.com/convergo-dev/convergo/ownership"
)

// release makes live, a kept child of owner ("keep"), no longer owner's, instead of
// deleting it: one JSON patch removes owner's owner references and, when it is tracked by owner, the
// tracking labels and annotations, each removal guarded by a test of the value it removes, and the whole
// by a test of live's UID. A copy that is stale (a test fails, 422) is read once from the API server and
// released from there. Afterwards the record counts the child gone from owner's children, so a cache
// that still shows it tracked sends no second release.
func (a *Applier) release(ctx context.Context, owner client.Object, id objectID, proto, live client.Object) (DeleteStep, error) {
	what := kobj.DescribeKey(id.gk.Kind, id.key)
	for attempt := 0; ; attempt++ {
		patch, err := releasePatch(live, owner)
		switch {
		case err != nil:
			return DeleteStep{Live: live}, fmt.Errorf("release %s: %w", what, err)
		case patch == nil:
			a.known.confirmGone(id, owner.GetUID(), live.GetUID()) // nothing of owner's left on it
			return DeleteStep{}, nil
		}
		target, ok := live.DeepCopyObject().(client.Object)
		if !ok {
			return DeleteStep{Live: live}, fmt.Errorf("release %s: copy of %T is not a client.Object", what, live)
		}
		err = a.client.Patch(ctx, target, client.RawPatch(types.JSONPatchType, patch))
		switch {
		case err == nil:
			logf.FromContext(ctx).Info("released child to outlive its owner", "object", what)
			a.known.confirmGone(id, owner.GetUID(), live.GetUID())
			return DeleteStep{}, nil
		case apierrors.IsNotFound(err):
			a.known.confirmGone(id, owner.GetUID(), live.GetUID())
			return DeleteStep{}, nil
		case (apierrors.IsInvalid(err) || apierrors.IsConflict(err)) && attempt == 0:
			// The copy was stale (a test failed) or another UID holds the name: look at the API server's.
			fresh, rerr := a.readLive(ctx, id.key, proto)
			switch {
			case rerr != nil:
				return DeleteStep{Live: live}, fmt.Errorf("release %s: %w", what, rerr)
			case fresh == nil:
				a.known.confirmGone(id, owner.GetUID(), "")
				return DeleteStep{}, nil
			case !belongsTo(fresh, owner):
				// Released already, or a successor that is not ours: the copy we had is no longer owner's.
				a.known.confirmGone(id, owner.GetUID(), live.GetUID())
				return DeleteStep{}, nil
			}
			live = fresh
		default:
			return DeleteStep{Live: live}, fmt.Errorf("release %s: %w", what, err)
		}
	}
}

// patchOp is one RFC 6902 JSON patch operation: a test of a string value, or a removal (no value).
type patchOp struct {
	Op    string  `json:"op"`
	Path  string  `json:"path"`
	Value *string `json:"value,omitempty"`
}

// testOp tests that path holds value.
func testOp(path, value string) patchOp { return patchOp{Op: "test", Path: path, Value: &value} }

// removeOp removes path.
func removeOp(path string) patchOp { return patchOp{Op: "remove", Path: path} }

// marksPrefix starts the key of every label and annotation Convergo writes on a child (the tracking
// labels and annotations of package ownership, the intent hash, the node annotations, the deletion
// policy): a released child keeps none of them.
const marksPrefix = "convergo.dev/"

// releasePatch returns the JSON patch that removes owner's owner references from live and, when live is
// tracked by owner, every label and annotation of Convergo's it carries (marksPrefix); nil when there
// is nothing to remove.
func releasePatch(live, owner client.Object) ([]byte, error) {
	var ops []patchOp
	if live.GetUID() != "" { // objects without UID (fake clients) are not guarded
		ops = append(ops, testOp("/metadata/uid", string(live.GetUID())))
	}
	guards := len(ops)
	refs := live.GetOwnerReferences()
	for i := len(refs) - 1; i >= 0; i-- { // from the end, so that each index still names its entry
		if refs[i].UID == owner.GetUID() {
			path := fmt.Sprintf("/metadata/ownerReferences/%d", i)
			ops = append(ops, testOp(path+"/uid", string(owner.GetUID())), removeOp(path))
		}
	}
	if ownership.IsTrackedBy(live, owner) {
		ops = appendRemovals(ops, "/metadata/labels/", live.GetLabels())
		ops = appendRemovals(ops, "/metadata/annotations/", live.GetAnnotations())
	}
	if len(ops) == guards {
		return nil, nil
	}
	return json.Marshal(ops)
}

// appendRemovals appends, for each key of m under marksPrefix in sorted order, a test of its value and
// its removal under prefix.
func appendRemovals(ops []patchOp, prefix string, m map[string]string) []patchOp {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !strings.HasPrefix(k, marksPrefix) {
			continue
		}
		v := m[k]
		path := prefix + escapePointer(k)
		ops = append(ops, testOp(path, v), removeOp(path))
	}
	return ops
}

// escapePointer escapes s as one JSON pointer token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
