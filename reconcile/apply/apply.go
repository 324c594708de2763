package apply

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
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
	"github.com/convergo-dev/convergo/reconcile/internal/intent"
	"github.com/convergo-dev/convergo/reconcile/internal/seam"
	"sigs.k8s.io/controller-runtime/pkg/cache"
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

// defaultFieldManager is the server-side apply field manager used unless WithFieldManager is given.
const defaultFieldManager = "convergo"

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
	return fmt.Sprintf("%s already exists without a controller (made by someone else, or released by KeepOnDelete) and is not %s's: delete it to have it created again, or adopt it with apply.WithAdoptOrphans()", e.Child, e.Owner)
}

// Option configures an Applier.
type Option func(*config)

type config struct {
	fieldManager        string
	adoptOrphans        bool
	recreateOnImmutable bool
	deleter             *directDeleter
	guard               func() error
}

// WithFieldManager sets the server-side apply field manager (default "convergo"). Use one
// name per controller.
func WithFieldManager(name string) Option {
	return func(c *config) { c.fieldManager = name }
}

// WithAdoptOrphans lets Apply take over an existing child that has no controller reference and no
// tracking label. Without it such a child is an *OrphanError.
func WithAdoptOrphans() Option {
	return func(c *config) { c.adoptOrphans = true }
}

// WithRecreateOnImmutable makes Apply delete and recreate a child when the API server rejects a
// change to an immutable field (a Deployment's selector, a Service's clusterIP, a Job's template).
// Without it such a change is an *ImmutableFieldError, and so it stays for a kept child
// ("keep"), whose data recreation would lose.
func WithRecreateOnImmutable() Option {
	return func(c *config) { c.recreateOnImmutable = true }
}

// WithWriteGuard makes every DELETE the Applier sends ask guard first: an error refuses it (a sharded
// Reconciler passes its shard's check that the member may still write).
func WithWriteGuard(guard func() error) Option {
	return func(c *config) { c.guard = guard }
}

// Applier applies owned children with zero spurious writes. Give it the manager's client, which
// reads from the cache, and the manager's API reader: the drift check then costs no request, only a child that does not hold its intent is written (server-side apply), and every
// answer that rests on a child's absence or identity comes from the API server or from the Applier's
// record of its own writes, never from the cache alone. An Applier is safe for concurrent use.
type Applier struct {
	hook
	client client.Client
	scheme *runtime.Scheme
	cfg    config
	// reader answers where the cache cannot: it reads from the API server.
	reader client.Reader
	// readsCache: NewApplier was given the client as its API reader.
	readsCache bool
	// known records the Applier's own writes and deletions the cache may not show yet; a Reconciler
	// shares it for its writes to the reconciled object.
	known *knowledge
	// protos holds one empty object per child type, shared by the records (never modified).
	protos sync.Map
	// cluster names the member cluster of an Applier made by In (whose children are tracked, never
	// controlled), and memberCache is that member's cache; "" and nil for the owner's own cluster.
	cluster     string
	memberCache cache.Cache
	members     members
	// scopes holds, by GroupVersionKind, whether the kind is namespaced, as the client's REST mapper
	// answered (a kind's scope never changes; a CRD's is immutable).
	scopes sync.Map
}

// proto returns the shared empty object of obj's type (for unstructured objects, of its kind).
func (a *Applier) proto(obj client.Object) client.Object {
	key := any(reflect.TypeOf(obj))
	if u, ok := obj.(*unstructured.Unstructured); ok {
		key = u.GroupVersionKind()
	}
	if p, ok := a.protos.Load(key); ok {
		return p.(client.Object)
	}
	p, _ := a.protos.LoadOrStore(key, kobj.New(obj))
	return p.(client.Object)
}

// NewApplier returns an Applier that reads children through c (the manager's client, which reads
// from the cache), writes through c, and maps Go types to kinds with c's scheme. apiReader reads from
// the API server (mgr.GetAPIReader()): the Applier asks it exactly where the cache cannot be trusted (a
// child the cache does not show although this Applier wrote it moments ago, a child that exists
// although the cache does not show it, found by a create that refused to overwrite it, and, during
// deletion, a child whose absence from the cache is not yet confirmed). A client that reads from the
// API server itself (no cache) is its own reader: NewApplier(c, c). NewApplier panics when apiReader
// is nil, since an Applier reading a lagging cache there would fail every re-apply of a child it has
// just created, long after construction.
//
//	a := apply.NewApplier(mgr.GetClient(), mgr.GetAPIReader(), apply.WithFieldManager("memcached"))
func NewApplier(c client.Client, apiReader client.Reader, opts ...Option) *Applier {
	cfg := config{fieldManager: defaultFieldManager}
	for _, o := range opts {
		o(&cfg)
	}
	if apiReader == nil {
		panic(errNilAPIReader)
	}
	a := &Applier{client: c, scheme: c.Scheme(), cfg: cfg, reader: apiReader, known: newKnowledge(), readsCache: sameReader(c, apiReader)}
	setSeam(a)
	return a
}

// setSeam makes a's seam.Applier reachable through seam.Of(a).
func setSeam(a *Applier) { seam.Set(&a.hook, writes{a}) }

// Client returns the client the Applier reads and writes with.
func (a *Applier) Client() client.Client { return a.client }

// Scheme returns the scheme the Applier maps types with.
func (a *Applier) Scheme() *runtime.Scheme { return a.scheme }

// FieldManager returns the server-side apply field manager name.
func (a *Applier) FieldManager() string { return a.cfg.fieldManager }

// Apply makes the child desired exist as declared, owned by owner, and returns the live child (the
// server's answer after a write, the cached object when nothing was sent; nil when it does not exist,
// e.g. after OperationRecreated while the old object is still being deleted) and what it did.
//
// desired is a typed object (or *unstructured.Unstructured) holding only what the operator cares
// about; it is not modified. Apply sets on a copy: the namespace (owner's, when the kind is
// namespaced and none is set), a controller reference to owner when Kubernetes allows one (same
// namespace, or a cluster-scoped owner; none for a child annotated "keep"), the tracking
// labels of package ownership on every child, and the intent-hash annotation. It then reads the live
// child from the client (the cache):
//
//   - not shown by the cache: a create-only server-side apply (OperationCreated), which the API server
//     refuses when the object exists although the cache does not show it (it lags, or is filtered);
//     the child is then read through the API reader (NewApplier's apiReader) and judged as below, so it is
//     never overwritten unless it is ours. A child this Applier wrote moments ago and the cache has not
//     shown yet is read through the API reader first (normally OperationUnchanged, nothing sent);
//   - every field of the intent already holds its value (each list compared by its merge semantics)
//     and the intent hash matches: OperationUnchanged, and nothing is sent;
//   - otherwise: server-side apply with the Applier's field manager, forcing ownership, guarded by the
//     judged object's UID (OperationUpdated). Fields dropped from desired are removed from the live
//     child.
//
// A live child controlled (or tracked) by another owner is an *ownership.AlreadyOwnedError, one
// without controller or tracking label an *OrphanError (unless WithAdoptOrphans), a rejected
// immutable change an *ImmutableFieldError (unless WithRecreateOnImmutable), a child being deleted
// ErrTerminating. owner may be nil for an unowned object.
//
// An *unstructured.Unstructured child is read with the client as well; controller-runtime's client
// reads unstructured objects from the API server (one GET per Apply) unless its cache is set up for
// them (client.Options{Cache: &client.CacheOptions{Unstructured: true}}).
func (a *Applier) Apply(ctx context.Context, owner, desired client.Object) (client.Object, Operation, error) {
	obj, ok := desired.DeepCopyObject().(client.Object)
	if !ok {
		return nil, "", fmt.Errorf("apply %T: not a client.Object", desired)
	}
	if err := a.reachable(ctx, obj); err != nil {
		return nil, "", err
	}
	return a.applyOwn(ctx, owner, obj)
}

// applyOwn is Apply of an object the caller hands over (Apply's own copy of desired, or Graph's
// annotated copy of a node's object): it is prepared and sent as it is, not copied again.
func (a *Applier) applyOwn(ctx context.Context, owner, obj client.Object) (client.Object, Operation, error) {
	c, err := a.newCall(owner, obj)
	if err != nil {
		return nil, "", err
	}
	live, err := a.current(ctx, c)
	if err != nil {
		return nil, "", fmt.Errorf("apply %s: read live object: %w", c.describe(), err)
	}
	return a.converge(ctx, c, live, true)
}

// applyCall is one Apply: the prepared copy of desired, its intent and identity.
type applyCall struct {
	owner  client.Object
	obj    client.Object
	gvk    schema.GroupVersionKind
	id     objectID
	scheme *runtime.Scheme
	// intent is computed when first needed (see computeIntent); hash, the digest of the whole intent
	// that the record of writes keeps, only for a write (see intentHash): a converged child's check
	// needs neither it nor its encoding.
	intent map[string]any
	hash   string
	// stamped: intent carries intent.HashAnnotation (set when first needed, see stamp).
	stamped bool
}

// computeIntent computes the intent of the prepared desired object, once.
func (c *applyCall) computeIntent() error {
	if c.intent != nil {
		return nil
	}
	in, err := intent.Of(c.obj, c.scheme)
	if err != nil {
		return fmt.Errorf("apply %s: %w", c.describe(), err)
	}
	c.intent = in
	return nil
}

// intentHash returns the digest of the whole intent (intent.Hash, which ignores the intent-hash
// annotation, so it is the same before and after stamp), computed once.
func (c *applyCall) intentHash() (string, error) {
	if c.hash != "" {
		return c.hash, nil
	}
	if err := c.computeIntent(); err != nil {
		return "", err
	}
	h, err := intent.Hash(c.intent)
	if err != nil {
		return "", fmt.Errorf("apply %s: %w", c.describe(), err)
	}
	c.hash = h
	return h, nil
}

// stamp sets intent.HashAnnotation on the intent, once.
func (c *applyCall) stamp() error {
	if c.stamped {
		return nil
	}
	if err := c.computeIntent(); err != nil {
		return err
	}
	if err := intent.Stamp(c.intent); err != nil {
		return fmt.Errorf("apply %s: %w", c.describe(), err)
	}
	c.stamped = true
	return nil
}

func (c *applyCall) ownerUID() types.UID {
	if c.owner == nil {
		return ""
	}
	return c.owner.GetUID()
}

// newCall prepares obj, the caller's own copy of a desired object (namespace, ownership, tracking);
// its intent is computed when needed.
func (a *Applier) newCall(owner, obj client.Object) (*applyCall, error) {
	gvk, err := apiutil.GVKForObject(obj, a.scheme)
	if err != nil {
		return nil, fmt.Errorf("apply %T %s: %w", obj, obj.GetName(), err)
	}
	if err := a.prepare(owner, obj, gvk); err != nil {
		return nil, err
	}
	return &applyCall{owner: owner, obj: obj, gvk: gvk, id: idOf(gvk.GroupKind(), obj), scheme: a.scheme}, nil
}

// describe names the child in messages ("Deployment ns/web"), made only when one is written: a
// converged child's check writes none.
func (c *applyCall) describe() string { return kobj.DescribeKey(c.gvk.Kind, c.id.key) }

// current returns the live child as far as the Applier can tell without writing: the cache's copy,
// or nil when it is absent. A cache miss for a child this Applier wrote and the cache has not shown
// yet, and a cached copy of a child this Applier deleted, are read once from the API server instead.
// A plain cache miss is left to the create, which refuses to overwrite an object that exists.
func (a *Applier) current(ctx context.Context, c *applyCall) (client.Object, error) {
	live := kobj.New(c.obj)
	err := a.client.Get(ctx, c.id.key, live)
	switch {
	case err == nil && a.known.deleteSent(c.id, live.GetUID()):
		return a.readLive(ctx, c.id.key, c.obj)
	case err == nil:
		a.known.observe(c.id, live) // the record of our last write goes once the cache shows it
		return live, nil
	case apierrors.IsNotFound(err) && a.known.unseenWrite(c.id):
		logf.FromContext(ctx).V(1).Info("cache does not show a child we wrote; reading it from the API server", "object", c.describe())
		return a.readLive(ctx, c.id.key, c.obj)
	case apierrors.IsNotFound(err):
		return nil, nil
	}
	return nil, err
}

// readLive reads the object key, of proto's type, from the API server (the Applier's reader); nil when
// it does not exist.
func (a *Applier) readLive(ctx context.Context, key client.ObjectKey, proto client.Object) (client.Object, error) {
	live := kobj.New(proto)
	if err := a.reader.Get(ctx, key, live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return live, nil
}

// converge creates the child when live is nil, or judges live and writes only on drift. Every write is
// conditional, so a cache that lags or hides objects can cost a read, never an invariant: a create
// fails when the object exists (it is then read from the API server and judged: never stolen, never
// overwritten), and an update applies only to the very object judged (same UID), not to one deleted
// or replaced meanwhile. retry allows one such re-read.
func (a *Applier) converge(ctx context.Context, c *applyCall, live client.Object, retry bool) (client.Object, Operation, error) {
	if live == nil {
		result, err := a.serverSideApply(ctx, c, createOnly)
		switch {
		case err == nil:
			a.known.wrote(c.id, c.ownerUID(), a.proto(c.obj), "", result, c.hash, false)
			return result, OperationCreated, nil
		case apierrors.IsConflict(err) && retry:
			logf.FromContext(ctx).V(1).Info("child exists although the cache does not show it; reading it from the API server", "object", c.describe())
			fresh, err := a.readLive(ctx, c.id.key, c.obj)
			switch {
			case err != nil:
				return nil, "", fmt.Errorf("apply %s: read live object: %w", c.describe(), err)
			case fresh == nil && a.readsCache:
				return nil, "", fmt.Errorf("apply %s: it exists, but the Applier's reader does not show it (a cache that lags or is filtered); give NewApplier a reader that goes to the API server: mgr.GetAPIReader()", c.describe())
			}
			return a.converge(ctx, c, fresh, false)
		}
		return nil, "", fmt.Errorf("apply %s: %w", c.describe(), err)
	}
	if live.GetDeletionTimestamp() != nil {
		return live, "", fmt.Errorf("apply %s: %w", c.describe(), ErrTerminating)
	}
	if c.owner != nil {
		if err := a.checkOwner(c.owner, live); err != nil {
			return live, "", fmt.Errorf("apply %s: %w", c.describe(), err)
		}
	}
	same, path, err := a.holds(c, live)
	if err != nil {
		return live, "", fmt.Errorf("apply %s: %w", c.describe(), err)
	}
	if same {
		return live, OperationUnchanged, nil
	}
	hash, err := c.intentHash()
	if err != nil {
		return live, "", err
	}
	if a.known.lagging(c.id, live, hash) {
		logf.FromContext(ctx).V(1).Info("cache has not seen our last write yet; not writing again", "object", c.describe())
		return live, OperationUnchanged, nil
	}
	logf.FromContext(ctx).V(1).Info("child drifted from its intent", "object", c.describe(), "firstDifference", path)
	// The caller's span (a graph node's apply) says what drifted.
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("convergo.drift", path))
	result, err := a.serverSideApply(ctx, c, sameObject(live))
	switch {
	case err == nil:
		a.known.wrote(c.id, c.ownerUID(), a.proto(c.obj), live.GetResourceVersion(), result, c.hash, false)
		return result, OperationUpdated, nil
	case identityChanged(err) && !retry:
		return nil, "", fmt.Errorf("apply %s: the child was deleted or replaced while it was applied: %w", c.describe(), err)
	case identityChanged(err):
		logf.FromContext(ctx).V(1).Info("child was deleted or replaced since it was read; reading it from the API server", "object", c.describe())
		fresh, err := a.readLive(ctx, c.id.key, c.obj)
		if err != nil {
			return nil, "", fmt.Errorf("apply %s: read live object: %w", c.describe(), err)
		}
		return a.converge(ctx, c, fresh, false)
	}
	if fields, ok := immutableFields(err); ok {
		return a.immutable(ctx, c, live, fields, err)
	}
	return nil, "", fmt.Errorf("apply %s: %w", c.describe(), err)
}

// holds reports whether live holds c's intent: every field it sets, compared by each list's merge
// semantics (see isSubset), and the intent hash annotation (the intent's shape, so that a field
// dropped from the intent counts); path is the first difference.
func (a *Applier) holds(c *applyCall, live client.Object) (bool, string, error) {
	if err := c.stamp(); err != nil {
		return false, "", err
	}
	_, fromUnstructured := c.obj.(runtime.Unstructured)
	return intent.Holds(c.intent, live, c.gvk, fromUnstructured)
}

// prepare sets namespace, ownership and tracking on obj, the caller's copy of desired.
func (a *Applier) prepare(owner, obj client.Object, gvk schema.GroupVersionKind) error {
	if obj.GetName() == "" {
		return fmt.Errorf("apply %s: desired object has no name", gvk.Kind)
	}
	namespaced, err := a.namespaced(obj, owner, gvk)
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
	what := func() string { return kobj.DescribeKey(gvk.Kind, client.ObjectKeyFromObject(obj)) }
	// A kept child gets no controller reference, so the garbage collector never deletes it (see
	// DeletionPolicyAnnotation); the tracking labels make it owner's.
	// Nor does a child in a member cluster: an owner reference cannot point into another cluster.
	if a.cluster == "" && (owner.GetNamespace() == "" || owner.GetNamespace() == obj.GetNamespace()) && policyOf(obj) != policyKeep {
		if err := ownership.SetController(owner, obj, a.scheme); err != nil {
			return fmt.Errorf("apply %s: %w", what(), err)
		}
	}
	if err := ownership.Track(owner, obj, a.scheme); err != nil {
		return fmt.Errorf("apply %s: %w", what(), err)
	}
	return nil
}

// namespaced asks the client's RESTMapper whether obj's kind is namespaced. A client without a
// mapping for the kind (a fake client without RESTMapper) falls back to "namespaced when obj or
// owner has a namespace".
func (a *Applier) namespaced(obj, owner client.Object, gvk schema.GroupVersionKind) (bool, error) {
	if ns, ok := a.scopes.Load(gvk); ok {
		return ns.(bool), nil
	}
	ns, err := a.client.IsObjectNamespaced(obj)
	if err == nil {
		a.scopes.Store(gvk, ns)
		return ns, nil
	}
	if meta.IsNoMatchError(err) {
		return obj.GetNamespace() != "" || owner != nil && owner.GetNamespace() != "", nil
	}
	return false, err
}

// reference names obj in an ownership error.
func (a *Applier) reference(obj client.Object) ownership.Reference {
	gvk, _ := apiutil.GVKForObject(obj, a.scheme)
	return ownership.Reference{Group: gvk.Group, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()}
}

// checkOwner refuses a live child that belongs to someone else.
func (a *Applier) checkOwner(owner, live client.Object) error {
	if err := ownership.CheckControllable(owner, live, a.scheme); err != nil {
		return err
	}
	if metav1.GetControllerOfNoCopy(live) != nil || ownership.IsTrackedBy(live, owner) {
		return nil // controlled by owner, or tracked by it
	}
	ownerRef, childRef := a.reference(owner), a.reference(live)
	if current, ok := ownership.TrackedOwner(live); ok {
		return &ownership.AlreadyOwnedError{Child: childRef, Owner: ownerRef, Current: current}
	}
	if a.cfg.adoptOrphans {
		return nil
	}
	return &OrphanError{Child: childRef, Owner: ownerRef}
}

// mayWrite reports whether the Applier may write now: the error of its write guard (WithWriteGuard),
// nil without one.
func (a *Applier) mayWrite() error {
	if a.cfg.guard == nil {
		return nil
	}
	return a.cfg.guard()
}

// errNilAPIReader is what NewApplier panics with when it is given no API reader.
var errNilAPIReader = errors.New("apply.NewApplier: the API reader is nil; pass mgr.GetAPIReader() " +
	"(or, for a client without a cache, the client itself: NewApplier(c, c))")

// sameReader reports whether r is (or may be) c, which then reads wherever c does (a cache, in an
// operator): a reader of c's type that cannot be compared counts as c.
func sameReader(c client.Client, r client.Reader) bool {
	cv, rv := reflect.ValueOf(c), reflect.ValueOf(r)
	return cv.Type() == rv.Type() && (!cv.Comparable() || cv.Equal(rv))
}
