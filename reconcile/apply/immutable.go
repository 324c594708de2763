package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/convergo-dev/convergo/ownership"
)

// ImmutableFieldError reports that the API server rejected a change to immutable fields.
type ImmutableFieldError struct {
	// Child is the object that could not be changed.
	Child ownership.Reference
	// Fields are the paths the API server named, e.g. "spec.selector".
	Fields []string
	// Err is the API server's error.
	Err error
}

// Error names the child, the fields and the way out.
func (e *ImmutableFieldError) Error() string {
	fields := "an immutable field"
	if len(e.Fields) > 0 {
		fields = "immutable field(s) " + strings.Join(e.Fields, ", ")
	}
	return fmt.Sprintf("%s: cannot change %s; delete the object or use apply.WithRecreateOnImmutable(): %v", e.Child, fields, e.Err)
}

// Unwrap returns the API server's error.
func (e *ImmutableFieldError) Unwrap() error { return e.Err }

// immutable handles a rejected change to immutable fields: an error, or with recreateOnImmutable
// a deletion of the live object (UID precondition) followed by one create-only apply.
func (a *Applier) immutable(ctx context.Context, c *applyCall, live client.Object, fields []string, cause error) (client.Object, Operation, error) {
	childRef := ownership.Reference{Group: c.gvk.Group, Kind: c.gvk.Kind, Namespace: live.GetNamespace(), Name: live.GetName(), UID: live.GetUID()}
	if !a.cfg.recreateOnImmutable || policyOf(c.obj) == policyKeep { // a kept child is never deleted
		return nil, "", fmt.Errorf("apply %s: %w", c.describe(), &ImmutableFieldError{Child: childRef, Fields: fields, Err: cause})
	}
	logf.FromContext(ctx).Info("recreating child to change immutable fields", "object", c.describe(), "fields", fields)
	if _, err := a.deleteExactly(ctx, c.id, c.ownerUID(), a.proto(c.obj), live, false, metav1.DeletePropagationBackground); err != nil {
		return nil, "", fmt.Errorf("apply %s: recreate: %w", c.describe(), err)
	}
	result, err := a.serverSideApply(ctx, c, createOnly)
	switch {
	case apierrors.IsConflict(err):
		return nil, OperationRecreated, nil // the old object is still being deleted
	case err != nil:
		return nil, "", fmt.Errorf("apply %s: recreate: %w", c.describe(), err)
	}
	a.known.wrote(c.id, c.ownerUID(), a.proto(c.obj), "", result, c.hash, false)
	return result, OperationRecreated, nil
}

// immutableFields reports whether err is the API server refusing to change immutable fields, and
// which fields it named.
func immutableFields(err error) ([]string, bool) {
	if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
		return nil, false
	}
	var fields []string
	found := false
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if d := status.Status().Details; d != nil {
			for _, c := range d.Causes {
				if c.Field != "metadata.uid" && isImmutableMessage(c.Message) {
					found = true
					if c.Field != "" && !slices.Contains(fields, c.Field) {
						fields = append(fields, c.Field)
					}
				}
			}
		}
	}
	if !found && isImmutableMessage(err.Error()) {
		found = true
	}
	return fields, found
}

func isImmutableMessage(msg string) bool {
	for _, s := range []string{"field is immutable", "is immutable", "may not change once set", "updates to statefulset spec for fields other than"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
