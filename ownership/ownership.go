package ownership

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// ErrCrossNamespace is wrapped by SetController when the owner and the child live in different
// namespaces: Kubernetes owner references cannot point across namespaces.
var ErrCrossNamespace = errors.New("owner references cannot cross namespaces")

// ErrClusterScopedChild is wrapped by SetController when a namespaced owner would control a child
// without a namespace: a cluster-scoped object cannot have a namespaced owner.
var ErrClusterScopedChild = errors.New("a cluster-scoped object cannot have a namespaced owner")

// Reference identifies an object in error messages and in the owner lookup of tracked children.
type Reference struct {
	// Group is the API group of the object ("" for the core group).
	Group string
	// Kind is the object's kind, e.g. "Deployment".
	Kind string
	// Namespace is empty for cluster-scoped objects.
	Namespace string
	// Name is the object's name.
	Name string
	// UID is the object's UID; it may be empty when unknown.
	UID types.UID
}

// String renders the reference as "Kind[.group] namespace/name (uid ...)".
func (r Reference) String() string {
	kind := r.Kind
	if r.Group != "" {
		kind += "." + r.Group
	}
	name := r.Name
	if r.Namespace != "" {
		name = r.Namespace + "/" + r.Name
	}
	if r.UID == "" {
		return kind + " " + name
	}
	return fmt.Sprintf("%s %s (uid %s)", kind, name, r.UID)
}

// referenceTo builds the Reference of obj, taking its kind from the object or, when the object
// carries no type information (typed objects read from a cache), from the scheme.
func referenceTo(obj client.Object, scheme *runtime.Scheme) (Reference, error) {
	gvk, err := gvkOf(obj, scheme)
	if err != nil {
		return Reference{}, err
	}
	return Reference{Group: gvk.Group, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()}, nil
}

// AlreadyOwnedError reports that a child is controlled by another owner. Convergo never takes a
// child away from its controller: delete the child, or give the new owner another name.
type AlreadyOwnedError struct {
	// Child is the object that was to be owned.
	Child Reference
	// Owner is the object that wanted to control Child.
	Owner Reference
	// Current is the controller that Child already has.
	Current Reference
}

// Error names the child, the current controller and the would-be owner.
func (e *AlreadyOwnedError) Error() string {
	return fmt.Sprintf("%s is already controlled by %s, not by %s: convergo never takes over a child of another controller; delete it or choose another name",
		e.Child, e.Current, e.Owner)
}

// SetController makes owner the controller of child: it adds (or refreshes) a controller owner
// reference with blockOwnerDeletion, so the garbage collector deletes child with its owner.
//
// It returns an error wrapping ErrCrossNamespace when owner and child are in different namespaces,
// an error wrapping ErrClusterScopedChild when a namespaced owner would control a child without
// namespace, and an *AlreadyOwnedError when child already has another controller. For the first two
// cases use Track instead (plus a finalizer on the owner that deletes the child): the garbage
// collector cannot help there. The owner must have a UID (read it from the API server first).
func SetController(owner, child client.Object, scheme *runtime.Scheme) error {
	ownerRef, err := referenceTo(owner, scheme)
	if err != nil {
		return fmt.Errorf("set controller: owner: %w", err)
	}
	if ownerRef.UID == "" {
		return fmt.Errorf("set controller of %s: owner %s has no UID: read it from the API server first", child.GetName(), ownerRef)
	}
	if owner.GetNamespace() != "" {
		switch child.GetNamespace() {
		case "":
			return fmt.Errorf("set controller of %q to %s: %w; if the child is namespaced, set its namespace to %q; if it is cluster-scoped, use ownership.Track and a finalizer on the owner instead",
				child.GetName(), ownerRef, ErrClusterScopedChild, owner.GetNamespace())
		case owner.GetNamespace():
		default:
			return fmt.Errorf("set controller of %s/%s to %s: %w; put the child in namespace %q, or use ownership.Track and a finalizer on the owner instead",
				child.GetNamespace(), child.GetName(), ownerRef, ErrCrossNamespace, owner.GetNamespace())
		}
	}
	gvk, err := gvkOf(owner, scheme)
	if err != nil {
		return fmt.Errorf("set controller: owner: %w", err)
	}
	if current := metav1.GetControllerOfNoCopy(child); current != nil && current.UID != owner.GetUID() {
		return alreadyOwned(owner, child, *current, scheme)
	}
	ref := metav1.OwnerReference{
		APIVersion:         gvk.GroupVersion().String(),
		Kind:               gvk.Kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
	refs := child.GetOwnerReferences()
	out := make([]metav1.OwnerReference, 0, len(refs)+1)
	replaced := false
	for _, r := range refs {
		if r.UID == ref.UID || sameOwnerName(r, ref) {
			if !replaced {
				out = append(out, ref)
				replaced = true
			}
			continue
		}
		out = append(out, r)
	}
	if !replaced {
		out = append(out, ref)
	}
	child.SetOwnerReferences(out)
	return nil
}

// IsControlledBy reports whether child's controller reference points at owner (by UID).
func IsControlledBy(child, owner client.Object) bool {
	ref := metav1.GetControllerOfNoCopy(child)
	return ref != nil && owner.GetUID() != "" && ref.UID == owner.GetUID()
}

// CheckControllable returns nil when owner may control child: child has no controller or owner is
// already its controller. Otherwise it returns an *AlreadyOwnedError naming both.
func CheckControllable(owner, child client.Object, scheme *runtime.Scheme) error {
	current := metav1.GetControllerOfNoCopy(child)
	if current == nil || current.UID == owner.GetUID() {
		return nil
	}
	return alreadyOwned(owner, child, *current, scheme)
}

func alreadyOwned(owner, child client.Object, current metav1.OwnerReference, scheme *runtime.Scheme) error {
	ownerRef, _ := referenceTo(owner, scheme)
	childRef, _ := referenceTo(child, scheme)
	currentRef, _ := referenceFrom(child, current)
	return &AlreadyOwnedError{Child: childRef, Owner: ownerRef, Current: currentRef}
}

// referenceFrom returns the Reference of the owner that child's owner reference ref names. Owner
// references point into the child's namespace. The error is that of parsing ref's API version (the
// group is then empty).
func referenceFrom(child client.Object, ref metav1.OwnerReference) (Reference, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return Reference{Group: gv.Group, Kind: ref.Kind, Namespace: child.GetNamespace(), Name: ref.Name, UID: ref.UID}, err
}

// sameOwnerName reports whether two owner references point at the same group, kind and name
// (an owner that was deleted and recreated keeps its name but gets a new UID).
func sameOwnerName(a, b metav1.OwnerReference) bool {
	aGV, errA := schema.ParseGroupVersion(a.APIVersion)
	bGV, errB := schema.ParseGroupVersion(b.APIVersion)
	return errA == nil && errB == nil && aGV.Group == bGV.Group && a.Kind == b.Kind && a.Name == b.Name
}

func gvkOf(obj client.Object, scheme *runtime.Scheme) (schema.GroupVersionKind, error) {
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != "" && gvk.Version != "" {
		return gvk, nil
	}
	if scheme == nil {
		return schema.GroupVersionKind{}, fmt.Errorf("%T carries no kind and no scheme was given", obj)
	}
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("kind of %T: %w", obj, err)
	}
	return gvk, nil
}
