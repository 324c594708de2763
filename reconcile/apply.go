package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/convergo-dev/convergo/internal/kobj"
	"github.com/convergo-dev/convergo/ownership"
)

// Operation is what Apply (or a Graph) did to a child.
type Operation string

// Operations reported by Apply, Graph.Apply and Prune.
const (
	// OperationCreated: the child did not exist and was created.
	OperationCreated Operation = "Created"
	// OperationUpdated: the live child did not hold the intent and was server-side applied.
	OperationUpdated Operation = "Updated"
	// OperationUnchanged: the live child already held the intent; nothing was sent.
	OperationUnchanged Operation = "Unchanged"
	// OperationDeleted: the child was deleted (pruning, graph deletion).
	OperationDeleted Operation = "Deleted"
	// OperationRecreated: an immutable field changed, so the live child was deleted and (when the
	// deletion completed at once) created again. See WithRecreateOnImmutable.
	OperationRecreated Operation = "Recreated"
)

// DefaultFieldManager is the server-side apply field manager used unless WithFieldManager is given.
const DefaultFieldManager = "convergo"

// ErrTerminating is returned (wrapped) by Apply when the live child is being deleted: it cannot be
// applied until it is gone. Graph.Apply reports such a child as not ready instead of failing.
var ErrTerminating = errors.New("child is being deleted; it will be applied again once it is gone")

// OrphanError reports that the child exists without a controller and without our tracking label.
// Convergo adopts such objects only with WithAdoptOrphans.
type OrphanError struct {
	// Child is the existing object.
	Child ownership.Reference
	// Owner is the object that wanted to own it.
	Owner ownership.Reference
}

// Error names the child and the would-be owner, and the option that allows adoption.
func (e *OrphanError) Error() string {
	return fmt.Sprintf("%s already exists without a controller; %s adopts it only with reconcile.WithAdoptOrphans()", e.Child, e.Owner)
}

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
	return fmt.Sprintf("%s: cannot change %s; delete the object or use reconcile.WithRecreateOnImmutable(): %v", e.Child, fields, e.Err)
}

// Unwrap returns the API server's error.
func (e *ImmutableFieldError) Unwrap() error { return e.Err }

// Option configures an Applier.
type Option func(*applierConfig)

type applierConfig struct {
	fieldManager        string
	adoptOrphans        bool
	recreateOnImmutable bool
	apiReader           client.Reader
}

// WithFieldManager sets the server-side apply field manager (default DefaultFieldManager). Use one
// name per controller.
func WithFieldManager(name string) Option {
	return func(c *applierConfig) { c.fieldManager = name }
}

// WithAdoptOrphans lets Apply take over an existing child that has no controller reference and no
// tracking label. Without it such a child is an *OrphanError.
func WithAdoptOrphans() Option {
	return func(c *applierConfig) { c.adoptOrphans = true }
}

// WithRecreateOnImmutable makes Apply delete and recreate a child when the API server rejects a
// change to an immutable field (a Deployment's selector, a Service's clusterIP, a Job's template).
// Without it such a change is an *ImmutableFieldError.
func WithRecreateOnImmutable() Option {
	return func(c *applierConfig) { c.recreateOnImmutable = true }
}

// WithAPIReader gives the Applier a reader that goes to the API server (mgr.GetAPIReader()). It is
// used in one case only: the cache does not show a child this Applier created moments ago with the
// same intent. Then one GET through r tells whether the child exists (the cache lags: no second
// write) or not (it is created again). Without an API reader such a child is applied again, which is
// harmless but is a write. The Reconciler passes the manager's API reader.
func WithAPIReader(r client.Reader) Option {
	return func(c *applierConfig) { c.apiReader = r }
}

// Applier applies owned children with zero spurious writes. Give it the manager's client, which
// reads from the cache: the drift check then costs no request, and only a child that does not hold
// its intent is written (server-side apply). An Applier is safe for concurrent use.
type Applier struct {
	client client.Client
	scheme *runtime.Scheme
	cfg    applierConfig

	mu sync.Mutex
	// written remembers, per child, the resourceVersion the cache showed before our last write, so
	// a cache that has not yet seen that write does not cause the same write again.
	written map[applyKey]applyRecord
	// created remembers, per child, when this Applier created it and with which intent, so that a
	// cache that does not show the new child yet can be checked with the API reader.
	created map[applyKey]createRecord
	// now is the clock of the created records; a variable for tests.
	now func() time.Time
}

// createWindow is how long after creating a child a cache miss for it is checked with the API reader
// before creating it again. A cache normally catches up within milliseconds; the window only bounds
// the records kept.
const createWindow = 10 * time.Second

// maxRemembered bounds the records of recent writes (one per child written since the cache last
// caught up).
const maxRemembered = 4096

type applyKey struct {
	gvk schema.GroupVersionKind
	key client.ObjectKey
}

type applyRecord struct {
	uid      types.UID
	rvBefore string
	hash     string
}

type createRecord struct {
	hash string
	at   time.Time
}

// NewApplier returns an Applier writing through c. scheme maps Go types to kinds; nil means
// c.Scheme().
func NewApplier(c client.Client, scheme *runtime.Scheme, opts ...Option) *Applier {
	if scheme == nil {
		scheme = c.Scheme()
	}
	cfg := applierConfig{fieldManager: DefaultFieldManager}
	for _, o := range opts {
		o(&cfg)
	}
	return &Applier{client: c, scheme: scheme, cfg: cfg, written: map[applyKey]applyRecord{},
		created: map[applyKey]createRecord{}, now: time.Now}
}

// Client returns the client the Applier reads and writes with.
func (a *Applier) Client() client.Client { return a.client }

// Scheme returns the scheme the Applier maps types with.
func (a *Applier) Scheme() *runtime.Scheme { return a.scheme }

// FieldManager returns the server-side apply field manager name.
func (a *Applier) FieldManager() string { return a.cfg.fieldManager }

// Apply makes the child desired exist as declared, owned by owner, and reports what it did.
//
// desired is a typed object (or *unstructured.Unstructured) holding only what the operator cares
// about; it is not modified. Apply sets on a copy: the namespace (owner's, when the kind is
// namespaced and none is set), a controller reference to owner when Kubernetes allows one (same
// namespace, or a cluster-scoped owner), the tracking labels of package ownership on every child,
// and the intent-hash annotation. It then reads the live child from the client (the cache):
//
//   - not found: server-side apply creates it (OperationCreated); but when this Applier created it
//     with the same intent moments ago and has an API reader (WithAPIReader), the cache lags: the
//     child is read once through the API reader and, found, judged as below (normally
//     OperationUnchanged, nothing sent);
//   - every field of the intent already holds its value and the intent hash matches:
//     OperationUnchanged, and nothing is sent;
//   - otherwise: server-side apply with the Applier's field manager, forcing ownership
//     (OperationUpdated). Fields dropped from desired are removed from the live child.
//
// A live child controlled (or tracked) by another owner is an *ownership.AlreadyOwnedError, one
// without controller or tracking label an *OrphanError (unless WithAdoptOrphans), a rejected
// immutable change an *ImmutableFieldError (unless WithRecreateOnImmutable), a child being deleted
// ErrTerminating. owner may be nil for an unowned object.
//
// An *unstructured.Unstructured child is read with the client as well; controller-runtime's client
// reads unstructured objects from the API server (one GET per Apply) unless its cache is set up for
// them (client.Options{Cache: &client.CacheOptions{Unstructured: true}}).
func (a *Applier) Apply(ctx context.Context, owner, desired client.Object) (Operation, error) {
	_, op, err := a.ApplyAndGet(ctx, owner, desired)
	return op, err
}

// ApplyAndGet is Apply returning also the live child: the server's answer after a write, or the
// cached object when nothing was sent. It is nil when the child does not exist (e.g. after
// OperationRecreated while the old object is still being deleted).
func (a *Applier) ApplyAndGet(ctx context.Context, owner, desired client.Object) (client.Object, Operation, error) {
	obj, ok := desired.DeepCopyObject().(client.Object)
	if !ok {
		return nil, "", fmt.Errorf("apply %T: not a client.Object", desired)
	}
	gvk, err := apiutil.GVKForObject(obj, a.scheme)
	if err != nil {
		return nil, "", fmt.Errorf("apply %T %s: %w", desired, desired.GetName(), err)
	}
	if err := a.prepare(owner, obj, gvk); err != nil {
		return nil, "", err
	}
	key := client.ObjectKeyFromObject(obj)
	what := kobj.DescribeKey(gvk.Kind, key)
	intent, err := Intent(obj, a.scheme)
	if err != nil {
		return nil, "", fmt.Errorf("apply %s: %w", what, err)
	}
	hash, err := IntentHash(intent)
	if err != nil {
		return nil, "", fmt.Errorf("apply %s: %w", what, err)
	}
	setIntentHash(intent, hash)

	live := kobj.New(obj)
	op := OperationUpdated
	k := applyKey{gvk, key}
	err = a.client.Get(ctx, key, live)
	switch {
	case err == nil:
		a.forgetCreate(k) // the cache shows the child
	case apierrors.IsNotFound(err) && a.createdRecently(k, hash):
		if fresh, found := a.readCreated(ctx, k, obj, what); found {
			live, err = fresh, nil
		}
	}
	switch {
	case apierrors.IsNotFound(err):
		op = OperationCreated
	case err != nil:
		return nil, "", fmt.Errorf("apply %s: read live object: %w", what, err)
	default:
		if live.GetDeletionTimestamp() != nil {
			return live, "", fmt.Errorf("apply %s: %w", what, ErrTerminating)
		}
		if owner != nil {
			if err := a.checkOwner(owner, live); err != nil {
				return live, "", fmt.Errorf("apply %s: %w", what, err)
			}
		}
		content, err := liveContent(live)
		if err != nil {
			return live, "", fmt.Errorf("apply %s: %w", what, err)
		}
		// Typed objects read from a cache carry no apiVersion/kind; we read by that very kind.
		content["apiVersion"], content["kind"] = intent["apiVersion"], intent["kind"]
		_, unstructuredIntent := obj.(runtime.Unstructured)
		same, path := isSubset(intent, content, unstructuredIntent)
		if same && live.GetAnnotations()[AnnotationIntentHash] == hash {
			return live, OperationUnchanged, nil
		}
		if a.awaitingCache(k, live, hash) {
			logf.FromContext(ctx).V(1).Info("cache has not seen our last write yet; not writing again", "object", what)
			return live, OperationUnchanged, nil
		}
		logf.FromContext(ctx).V(1).Info("child drifted from its intent", "object", what, "firstDifference", path,
			"hashMatches", live.GetAnnotations()[AnnotationIntentHash] == hash)
	}

	result, err := a.serverSideApply(ctx, intent, obj, gvk)
	if err != nil {
		if fields, ok := immutableFields(err); ok && op == OperationUpdated {
			return a.immutable(ctx, live, intent, obj, gvk, fields, err)
		}
		return nil, "", fmt.Errorf("apply %s: %w", what, err)
	}
	switch op {
	case OperationUpdated:
		a.remember(k, live, hash)
	case OperationCreated:
		a.rememberCreate(k, hash)
	}
	return result, op, nil
}

// readCreated reads a child this Applier created moments ago, and the cache does not show yet,
// through the API reader, and reports whether it exists. Not found, it is created again; an error of
// the API reader counts as not found, so the caller behaves as without an API reader.
func (a *Applier) readCreated(ctx context.Context, k applyKey, obj client.Object, what string) (client.Object, bool) {
	fresh := kobj.New(obj)
	err := a.cfg.apiReader.Get(ctx, k.key, fresh)
	switch {
	case err == nil:
		logf.FromContext(ctx).V(1).Info("cache does not show the child we just created; read it from the API server", "object", what)
		return fresh, true
	case apierrors.IsNotFound(err):
		a.forgetCreate(k)
	default:
		logf.FromContext(ctx).V(1).Info("cannot read a child we just created from the API server; applying it", "object", what, "error", err.Error())
	}
	return nil, false
}

// prepare sets namespace, ownership and tracking on obj, the caller's copy of desired.
func (a *Applier) prepare(owner, obj client.Object, gvk schema.GroupVersionKind) error {
	if obj.GetName() == "" {
		return fmt.Errorf("apply %s: desired object has no name", gvk.Kind)
	}
	namespaced, err := a.namespaced(obj, owner)
	if err != nil {
		return fmt.Errorf("apply %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	switch {
	case !namespaced:
		obj.SetNamespace("")
	case obj.GetNamespace() == "" && owner != nil && owner.GetNamespace() != "":
		obj.SetNamespace(owner.GetNamespace())
	case obj.GetNamespace() == "":
		return fmt.Errorf("apply %s %s: namespaced object has no namespace", gvk.Kind, obj.GetName())
	}
	if owner == nil {
		return nil
	}
	what := kobj.DescribeKey(gvk.Kind, client.ObjectKeyFromObject(obj))
	if owner.GetNamespace() == "" || owner.GetNamespace() == obj.GetNamespace() {
		if err := ownership.SetController(owner, obj, a.scheme); err != nil {
			return fmt.Errorf("apply %s: %w", what, err)
		}
	}
	if err := ownership.Track(owner, obj, a.scheme); err != nil {
		return fmt.Errorf("apply %s: %w", what, err)
	}
	return nil
}

// namespaced asks the client's RESTMapper whether obj's kind is namespaced. A client without a
// mapping for the kind (a fake client without RESTMapper) falls back to "namespaced when obj or
// owner has a namespace".
func (a *Applier) namespaced(obj, owner client.Object) (bool, error) {
	ns, err := a.client.IsObjectNamespaced(obj)
	if err == nil {
		return ns, nil
	}
	if meta.IsNoMatchError(err) {
		return obj.GetNamespace() != "" || owner != nil && owner.GetNamespace() != "", nil
	}
	return false, err
}

// checkOwner refuses a live child that belongs to someone else.
func (a *Applier) checkOwner(owner, live client.Object) error {
	if err := ownership.CheckControllable(owner, live, a.scheme); err != nil {
		return err
	}
	if metav1.GetControllerOfNoCopy(live) != nil || ownership.IsTrackedBy(live, owner) {
		return nil // controlled by owner, or tracked by it
	}
	ownerRef, _ := ownership.ReferenceTo(owner, a.scheme)
	childRef, _ := ownership.ReferenceTo(live, a.scheme)
	if current, ok := ownership.TrackedOwner(live); ok {
		return &ownership.AlreadyOwnedError{Child: childRef, Owner: ownerRef, Current: current}
	}
	if a.cfg.adoptOrphans {
		return nil
	}
	return &OrphanError{Child: childRef, Owner: ownerRef}
}

func (a *Applier) serverSideApply(ctx context.Context, intent map[string]any, obj client.Object, gvk schema.GroupVersionKind) (client.Object, error) {
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(intent)}
	if err := a.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(a.cfg.fieldManager), client.ForceOwnership); err != nil {
		return nil, err
	}
	if _, ok := obj.(runtime.Unstructured); ok {
		u.SetGroupVersionKind(gvk)
		return u, nil
	}
	out := kobj.New(obj)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, fmt.Errorf("convert server answer: %w", err)
	}
	return out, nil
}

// immutable handles a rejected change to immutable fields: an error, or with recreateOnImmutable
// a deletion of the live object (UID precondition) followed by one attempt to create it again.
func (a *Applier) immutable(ctx context.Context, live client.Object, intent map[string]any, obj client.Object, gvk schema.GroupVersionKind, fields []string, cause error) (client.Object, Operation, error) {
	childRef := ownership.Reference{Group: gvk.Group, Kind: gvk.Kind, Namespace: live.GetNamespace(), Name: live.GetName(), UID: live.GetUID()}
	what := kobj.DescribeKey(gvk.Kind, client.ObjectKeyFromObject(live))
	if !a.cfg.recreateOnImmutable {
		return nil, "", fmt.Errorf("apply %s: %w", what, &ImmutableFieldError{Child: childRef, Fields: fields, Err: cause})
	}
	logf.FromContext(ctx).Info("recreating child to change immutable fields", "object", what, "fields", fields)
	if err := deleteExact(ctx, a.client, live); err != nil {
		return nil, "", fmt.Errorf("apply %s: recreate: %w", what, err)
	}
	result, err := a.serverSideApply(ctx, intent, obj, gvk)
	if err != nil {
		if _, still := immutableFields(err); still {
			return nil, OperationRecreated, nil // the old object is still being deleted
		}
		return nil, "", fmt.Errorf("apply %s: recreate: %w", what, err)
	}
	return result, OperationRecreated, nil
}

// deleteExact deletes exactly the object observed (UID precondition) in the background; an object
// already gone or replaced is not an error.
func deleteExact(ctx context.Context, c client.Client, obj client.Object) error {
	_, err := deleteExactly(ctx, c, obj)
	return err
}

// deleteExactly is deleteExact reporting whether the API server accepted the deletion (false when
// the object was already gone or replaced by another with the same name).
func deleteExactly(ctx context.Context, c client.Client, obj client.Object) (bool, error) {
	uid := obj.GetUID()
	err := c.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return false, nil
	}
	return err == nil, err
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
				if isImmutableMessage(c.Message) {
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

// awaitingCache reports whether live is the very version the cache showed before our last write of
// the same intent: the cache lags behind, and writing again would be spurious.
func (a *Applier) awaitingCache(k applyKey, live client.Object, hash string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	rec, ok := a.written[k]
	if !ok {
		return false
	}
	if rec.uid == live.GetUID() && rec.rvBefore == live.GetResourceVersion() && rec.hash == hash {
		return true
	}
	delete(a.written, k) // the cache moved on
	return false
}

func (a *Applier) remember(k applyKey, live client.Object, hash string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.written) >= maxRemembered {
		clear(a.written) // records of children that are gone; losing them costs at most a write
	}
	a.written[k] = applyRecord{uid: live.GetUID(), rvBefore: live.GetResourceVersion(), hash: hash}
}

// createdRecently reports whether this Applier created the child k with intent hash within
// createWindow and can ask the API server about it.
func (a *Applier) createdRecently(k applyKey, hash string) bool {
	if a.cfg.apiReader == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	rec, ok := a.created[k]
	if !ok {
		return false
	}
	if rec.hash != hash || a.now().Sub(rec.at) > createWindow {
		delete(a.created, k)
		return false
	}
	return true
}

// rememberCreate records that this Applier created the child k with intent hash (only with an API
// reader, the one user of the record).
func (a *Applier) rememberCreate(k applyKey, hash string) {
	if a.cfg.apiReader == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.created) >= maxRemembered {
		clear(a.created) // losing them costs at most a write
	}
	a.created[k] = createRecord{hash: hash, at: a.now()}
}

// forgetCreate drops the create record of k: the cache shows the child, or it is gone.
func (a *Applier) forgetCreate(k applyKey) {
	if a.cfg.apiReader == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.created, k)
}

func setIntentHash(intent map[string]any, hash string) {
	md, _ := intent["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		intent["metadata"] = md
	}
	anns, _ := md["annotations"].(map[string]any)
	if anns == nil {
		anns = map[string]any{}
		md["annotations"] = anns
	}
	anns[AnnotationIntentHash] = hash
}
