package ownership

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/convergo-dev/convergo/internal/marks"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// OwnerUIDLabel holds, on every child Convergo applies, whether or not it also has an owner
// reference, its owner's UID: it selects an owner's children (pruning finds them by it, and
// EnqueueTrackedOwner maps their events back to their owner). Track adds four more marks that name
// the owner on children whose owner references cannot.
const OwnerUIDLabel = marks.OwnerUID

// Track marks child as belonging to owner with tracking labels (owner UID, kind, group) and
// annotations (owner name and namespace). Unlike SetController it works across namespaces and for
// cluster-scoped children of namespaced owners; the garbage collector does not see these marks, so
// the owner needs a finalizer that deletes tracked children (graph.Graph.Delete does).
//
// When child already has an owner reference to owner and both are in one namespace (SetController
// first), the reference names the owner, and Track sets only the UID label (removing the other
// marks): TrackedOwner reads the rest from the reference. Track does not touch owner references
// and never fails on a child that another owner tracks: check IsTrackedBy first when that matters.
func Track(owner, child client.Object, scheme *runtime.Scheme) error {
	ref, err := referenceTo(owner, scheme)
	if err != nil {
		return fmt.Errorf("track %s: owner: %w", child.GetName(), err)
	}
	if ref.UID == "" {
		return fmt.Errorf("track %s: owner %s has no UID: read it from the API server first", child.GetName(), ref)
	}
	named := ref.Namespace != "" && ref.Namespace == child.GetNamespace() && referenceWith(child, ref.UID) != nil
	values := []struct{ key, value string }{{OwnerUIDLabel, string(ref.UID)}, {marks.OwnerKind, ref.Kind}, {marks.OwnerGroup, ref.Group}}
	if named {
		values = values[:1]
	}
	for _, l := range values {
		if !isLabelValue(l.value) {
			return fmt.Errorf("track %s: label %s=%q: %s", child.GetName(), l.key, l.value, strings.Join(validation.IsValidLabelValue(l.value), "; "))
		}
	}
	// New maps: the child's may be shared with other objects (a selector, say).
	labels := make(map[string]string, len(child.GetLabels())+len(values))
	maps.Copy(labels, child.GetLabels())
	delete(labels, marks.OwnerKind)
	delete(labels, marks.OwnerGroup)
	for _, l := range values {
		if l.value != "" { // no group label for the core group
			labels[l.key] = l.value
		}
	}
	child.SetLabels(labels)
	annotations := make(map[string]string, len(child.GetAnnotations())+2)
	maps.Copy(annotations, child.GetAnnotations())
	delete(annotations, marks.OwnerName)
	delete(annotations, marks.OwnerNamespace)
	if !named {
		annotations[marks.OwnerName] = ref.Name
		if ref.Namespace != "" {
			annotations[marks.OwnerNamespace] = ref.Namespace
		}
	}
	if len(annotations) == 0 {
		annotations = nil
	}
	child.SetAnnotations(annotations)
	return nil
}

// referenceWith returns child's owner reference with uid, or nil.
func referenceWith(child client.Object, uid types.UID) *metav1.OwnerReference {
	refs := child.GetOwnerReferences()
	for i := range refs {
		if refs[i].UID == uid {
			return &refs[i]
		}
	}
	return nil
}

// isLabelValue reports whether v is a valid label value, as validation.IsValidLabelValue decides
// without its regular expression (which was most of what Track cost a reconcile): at most 63
// characters, alphanumeric at both ends, '-', '_' and '.' between; or empty.
func isLabelValue(v string) bool {
	if len(v) > validation.LabelValueMaxLength {
		return false
	}
	for i := range len(v) {
		c := v[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			continue
		}
		if i == 0 || i == len(v)-1 || c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// IsTrackedBy reports whether child carries owner's UID in its tracking label.
func IsTrackedBy(child, owner client.Object) bool {
	uid := child.GetLabels()[OwnerUIDLabel]
	return uid != "" && types.UID(uid) == owner.GetUID()
}

// TrackedOwner returns the owner recorded in child's tracking labels and annotations, and false
// when child is not tracked. A child that carries only the UID label (see Track) names its owner in
// the owner reference with that UID, in the child's namespace.
func TrackedOwner(child client.Object) (Reference, bool) {
	labels := child.GetLabels()
	uid := labels[OwnerUIDLabel]
	if uid == "" {
		return Reference{}, false
	}
	annotations := child.GetAnnotations()
	kind, name := labels[marks.OwnerKind], annotations[marks.OwnerName]
	if kind == "" && name == "" && child.GetNamespace() != "" {
		ref := referenceWith(child, types.UID(uid))
		if ref == nil {
			return Reference{}, false
		}
		owner, err := referenceFrom(child, *ref)
		if err != nil || owner.Kind == "" || owner.Name == "" {
			return Reference{}, false
		}
		return owner, true
	}
	if kind == "" || name == "" {
		return Reference{}, false
	}
	return Reference{
		Group:     labels[marks.OwnerGroup],
		Kind:      kind,
		Namespace: annotations[marks.OwnerNamespace],
		Name:      name,
		UID:       types.UID(uid),
	}, true
}

// EnqueueTrackedOwner returns an event handler that maps a tracked child (see Track) to a reconcile
// request for its owner, when the owner is of ownerType's kind. Use it to watch children that
// cannot carry an owner reference (cluster-scoped children of namespaced owners, children in other
// namespaces), e.g. builder.Watches(&rbacv1.ClusterRole{}, ownership.EnqueueTrackedOwner(&v1.App{}, scheme)).
// It also works for children that do have an owner reference, since Convergo tracks every child.
func EnqueueTrackedOwner(ownerType client.Object, scheme *runtime.Scheme) handler.EventHandler {
	gvk, gvkErr := gvkOf(ownerType, scheme)
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, child client.Object) []ctrlreconcile.Request {
		if gvkErr != nil {
			logf.FromContext(ctx).Error(gvkErr, "cannot map tracked child to its owner", "child", client.ObjectKeyFromObject(child))
			return nil
		}
		return requestsFor(gvk.GroupKind(), child)
	})
}

func requestsFor(owner schema.GroupKind, child client.Object) []ctrlreconcile.Request {
	ref, ok := TrackedOwner(child)
	if !ok || ref.Group != owner.Group || ref.Kind != owner.Kind {
		return nil
	}
	return []ctrlreconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}}}
}
