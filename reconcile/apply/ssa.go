package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/internal/kobj"
	"github.com/convergo-dev/convergo/internal/telemetry"
)

// createOnlyVersion is the resourceVersion a create-only apply carries. A server-side apply with a
// resourceVersion is refused with 409 Conflict unless the live object has that version, and creates the
// object when there is none; no object ever has version "1" (etcd's first write is revision 2).
const createOnlyVersion = "1"

// applyGuard says which object an apply may write: none yet (create), or the one with a UID.
type applyGuard struct {
	create bool
	uid    types.UID
}

// createOnly guards a create: the apply fails with a conflict when the object exists.
var createOnly = applyGuard{create: true}

// sameObject guards an update: the apply writes only the object with live's UID (422 or 409 when it
// was replaced or is gone, see identityChanged). Objects without UID (fake clients) are not guarded.
func sameObject(live client.Object) applyGuard { return applyGuard{uid: live.GetUID()} }

// serverSideApply sends the intent with the Applier's field manager, forcing ownership of its fields,
// under guard g.
func (a *Applier) serverSideApply(ctx context.Context, c *applyCall, g applyGuard) (client.Object, error) {
	if err := c.stamp(); err != nil {
		return nil, err
	}
	if _, err := c.intentHash(); err != nil { // for the record of the write
		return nil, err
	}
	body, err := applyBody(c.intent, g, writtenFor(ctx, c.gvk))
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", c.describe(), err)
	}
	// The intent goes as a raw apply patch, and the answer is decoded straight into the child's own
	// type: for built-in kinds the client then asks for protobuf, which the API server encodes and the
	// client decodes several times faster than the JSON of controller-runtime's Apply (decoded into
	// unstructured content, then converted).
	out := kobj.NewLike(c.obj)
	if err := a.client.Patch(ctx, out, client.RawPatch(types.ApplyPatchType, body), client.FieldOwner(a.cfg.fieldManager), client.ForceOwnership, applyValidation); err != nil {
		return nil, err
	}
	out.GetObjectKind().SetGroupVersionKind(c.gvk)
	return out, nil
}

// applyValidation is the field validation of the Applier's writes: none. For a server-side apply the
// directive only decides whether the API server parses the body a second time, strictly, to look for
// duplicate keys (a field the schema does not declare is refused whatever the directive, unless the
// schema keeps unknown fields), and a body encoded from a map has none. That second parse was 2% of
// the API server's CPU while the bench's operator created its children.
const applyValidation = client.FieldValidation(metav1.FieldValidationIgnore)

// writtenFor returns the value of telemetry.WrittenForAnnotation for a write of a gvk child under ctx,
// "" for none. A Deployment gets none: the Deployment controller copies a Deployment's annotations to
// its ReplicaSets, so an annotation that changes with each reconcile's trigger would cost it a
// ReplicaSet write (and often a conflict) for every write of ours.
func writtenFor(ctx context.Context, gvk schema.GroupVersionKind) string {
	if gvk.Group == "apps" && gvk.Kind == "Deployment" {
		return ""
	}
	return telemetry.WrittenFor(ctx)
}

// applyBody returns the JSON of intent as an apply patch guarded by g: with the create-only
// resourceVersion, or with the UID of the object it may change; and, when why is not empty (the
// reconcile's trigger), with telemetry.WrittenForAnnotation. intent is left as it is: what the write
// is for is not part of what the child must hold.
func applyBody(intent map[string]any, g applyGuard, why string) ([]byte, error) {
	if g.create || g.uid != "" || why != "" {
		md, _ := intent["metadata"].(map[string]any)
		md = maps.Clone(md)
		if md == nil {
			md = map[string]any{}
		}
		switch {
		case g.create:
			md["resourceVersion"] = createOnlyVersion
		case g.uid != "":
			md["uid"] = string(g.uid)
		}
		if why != "" {
			annotations, _ := md["annotations"].(map[string]any)
			annotations = maps.Clone(annotations)
			if annotations == nil {
				annotations = map[string]any{}
			}
			annotations[telemetry.WrittenForAnnotation] = why
			md["annotations"] = annotations
		}
		intent = maps.Clone(intent)
		intent["metadata"] = md
	}
	return json.Marshal(intent)
}

// identityChanged reports whether a UID-guarded apply failed because the object is no longer the one
// judged: replaced by another (422 on metadata.uid) or gone (409 "uid mismatch").
func identityChanged(err error) bool {
	if apierrors.IsConflict(err) {
		return strings.Contains(err.Error(), "uid mismatch")
	}
	if !apierrors.IsInvalid(err) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if d := status.Status().Details; d != nil {
			for _, c := range d.Causes {
				if c.Field == "metadata.uid" {
					return true
				}
			}
		}
	}
	return false
}
