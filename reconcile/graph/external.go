package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/internal/marks"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/internal/seam"
)

// External is how a graph manages one kind of object that lives outside the API server (a PostgreSQL
// role, a bucket, a DNS record), named by an identity string the author chooses (the role's name). S
// is the desired state of one such object. Implement it once per kind (or fill in ExternalFuncs) and
// declare objects with AddExternal. Every method must be idempotent, and safe to call again after a
// crash at any point.
//
// The owner mark is the owner's UID. Apply leaves it on the object where the system holds one (a
// comment, a tag, a label) and Observe reports it in Observation.Owner; OwnerMark and OwnerFromMark
// encode it in, and read it from, free text such as a comment. An object without a mark is the owner's
// only while the owner's record (marks.External) names it.
type External[S any] interface {
	// Kind names the kind, such as "postgres.role". It is recorded on the owner with every identity,
	// so that pruning and deletion find the kind again: keep it stable, without "/".
	Kind() string
	// Observe reads the object called id and judges it against want: whether it exists, whom it was
	// created for (the owner mark Apply left on it), whether it holds want, whether it is ready. It
	// must report Exists and Owner whatever want holds: deletion and pruning pass the zero S.
	Observe(ctx context.Context, id string, want S) (Observation, error)
	// Apply creates the object called id, or changes it to hold want, and leaves owner on it as its
	// owner mark where the system can hold one. found is what Observe reported just before (found.Exists
	// says whether to create or to change): Apply is called only when the object was missing or did
	// not hold want, and, for an object that exists, only when it is this owner's (or AdoptExisting
	// allows taking it over).
	Apply(ctx context.Context, id string, want S, found Observation, owner string) error
	// Delete deletes the object called id. An object already gone is no error. It is called only for
	// an object that is this owner's.
	Delete(ctx context.Context, id string) error
}

// Releaser is implemented by an External that can take its owner mark off an object, called for a
// kept object (KeepOnDelete) when its owner lets it go, so that another owner may adopt it later.
type Releaser interface {
	// Release removes the owner mark from the object called id; an object already gone is no error.
	Release(ctx context.Context, id string) error
}

// ownerMarkPrefix starts the text OwnerMark writes.
const ownerMarkPrefix = "convergo.dev/owner="

// OwnerMark returns the owner mark of owner (the owner argument of External.Apply) as free text, for
// a system that holds a comment or a description rather than a tag: "convergo.dev/owner=<owner>".
//
//	COMMENT ON ROLE app IS 'convergo.dev/owner=6f1c...'
func OwnerMark(owner string) string { return ownerMarkPrefix + owner }

// OwnerFromMark returns the owner a text written by OwnerMark names, for Observation.Owner: "" when
// the text holds no owner mark (another tool's comment, none).
func OwnerFromMark(text string) string {
	owner, _ := strings.CutPrefix(text, ownerMarkPrefix)
	if len(owner) == len(text) {
		return ""
	}
	return owner
}

// ExternalFuncs is an External made of functions, for a kind that needs no type of its own (as
// crossplane's ExternalClientFns). Observe, Apply and Delete must be set; Release may be nil, in which
// case a kept object is let go without touching it.
//
//	var roles = graph.ExternalFuncs[RoleState]{KindName: "postgres.role", ObserveFn: observeRole, ApplyFn: applyRole, DeleteFn: dropRole}
type ExternalFuncs[S any] struct {
	// KindName is what Kind returns.
	KindName string
	// ObserveFn is Observe.
	ObserveFn func(ctx context.Context, id string, want S) (Observation, error)
	// ApplyFn is Apply.
	ApplyFn func(ctx context.Context, id string, want S, found Observation, owner string) error
	// DeleteFn is Delete.
	DeleteFn func(ctx context.Context, id string) error
	// ReleaseFn is Release (see Releaser); nil releases nothing.
	ReleaseFn func(ctx context.Context, id string) error
}

// Kind returns f.KindName.
func (f ExternalFuncs[S]) Kind() string { return f.KindName }

// Observe calls f.ObserveFn.
func (f ExternalFuncs[S]) Observe(ctx context.Context, id string, want S) (Observation, error) {
	return f.ObserveFn(ctx, id, want)
}

// Apply calls f.ApplyFn.
func (f ExternalFuncs[S]) Apply(ctx context.Context, id string, want S, found Observation, owner string) error {
	return f.ApplyFn(ctx, id, want, found, owner)
}

// Delete calls f.DeleteFn.
func (f ExternalFuncs[S]) Delete(ctx context.Context, id string) error { return f.DeleteFn(ctx, id) }

// Release calls f.ReleaseFn, if set.
func (f ExternalFuncs[S]) Release(ctx context.Context, id string) error {
	if f.ReleaseFn == nil {
		return nil
	}
	return f.ReleaseFn(ctx, id)
}

// Observation is what External.Observe found.
type Observation struct {
	// Exists is true when the object exists.
	Exists bool
	// Owner is the owner mark found on the object (what Apply was given), empty when the object has
	// none or the system cannot hold one.
	Owner string
	// UpToDate is true when the object holds the desired state; when false, Apply is called.
	UpToDate bool
	// Ready is true when the object is ready for the nodes that depend on it; Reason says why not.
	Ready bool
	// Reason explains why the object is not ready (or not up to date).
	Reason string
}

// defaultObserveInterval is how often an external node is observed again, by default, once it holds
// its intent (see Node.ObserveEvery).
const defaultObserveInterval = time.Minute

// notReadyObserveInterval bounds how long a node that is not ready yet waits to be observed again.
const notReadyObserveInterval = 10 * time.Second

// ErrNotOwned is wrapped by the error of an external node whose object exists but is not the owner's:
// it was not created for this owner and carries no owner mark of it. The graph does not take it over
// without AdoptExisting, and never deletes it.
var ErrNotOwned = errors.New("exists but was not created for this owner")

// externalNode is what AddExternal declared: the kind's operations with the node's desired state
// bound, and the node's identity.
type externalNode struct {
	ops       externalOps
	id        string
	interval  time.Duration
	adopt     bool
	keep      bool
	badPolicy string
}

// externalOps are one kind's operations with the desired state bound (the zero state for a kind
// known only through WithExternalKinds).
type externalOps struct {
	kind    string
	observe func(ctx context.Context, id string) (Observation, error)
	apply   func(ctx context.Context, id string, found Observation, owner string) error
	delete  func(ctx context.Context, id string) error
	release func(ctx context.Context, id string) error
	// missing names the function an ExternalFuncs lacks.
	missing string
}

// opsOf binds want to ext's operations.
func opsOf[S any](ext External[S], want S) externalOps {
	kind := ext.Kind()
	ops := externalOps{
		kind: kind,
		observe: func(ctx context.Context, id string) (Observation, error) {
			return traced(ctx, kind, "observe", id, func(ctx context.Context) (Observation, error) { return ext.Observe(ctx, id, want) })
		},
		apply: func(ctx context.Context, id string, found Observation, owner string) error {
			return tracedCall(ctx, kind, "apply", id, func(ctx context.Context) error { return ext.Apply(ctx, id, want, found, owner) })
		},
		delete: func(ctx context.Context, id string) error {
			return tracedCall(ctx, kind, "delete", id, func(ctx context.Context) error { return ext.Delete(ctx, id) })
		},
	}
	if f, ok := ext.(ExternalFuncs[S]); ok {
		switch {
		case f.ObserveFn == nil:
			ops.missing = "ObserveFn"
		case f.ApplyFn == nil:
			ops.missing = "ApplyFn"
		case f.DeleteFn == nil:
			ops.missing = "DeleteFn"
		}
	}
	if r, ok := ext.(Releaser); ok {
		ops.release = func(ctx context.Context, id string) error {
			return tracedCall(ctx, kind, "release", id, func(ctx context.Context) error { return r.Release(ctx, id) })
		}
	}
	return ops
}

// AddExternal declares the external object id, of ext's kind, as the node name of g, with its desired
// state want. The node takes part in everything a child does: DependsOn and DependsOnForCreation (both
// ways: it may depend on children and children on it), readiness (Observation.Ready) in the result and
// the owner's conditions, ordered deletion behind the owner's finalizer, KeepOnDelete, pruning once
// the graph no longer declares it, and the renderings.
//
// Graph.Apply observes the object; one that is missing is created, after its identity is recorded on
// the owner (marks.External), and one that does not hold want is updated, only when it is the
// owner's: it carries the owner's mark, or it carries none and the owner's record names it. Any other
// existing object is an error wrapping ErrNotOwned, and is neither changed nor deleted, unless the
// node says AdoptExisting. External systems send no watch events: Result.ObserveAgain says when to look
// again (see ObserveEvery), and a converged node costs one Observe per reconcile and no write.
//
//	graph.AddExternal(g, "database", databases, "app", DatabaseSpec{Owner: "app"}).DependsOn("role")
func AddExternal[S any](g *Graph, name string, ext External[S], id string, want S) *Node {
	n := g.Add(name, nil)
	n.ext = &externalNode{id: id, interval: defaultObserveInterval}
	if ext != nil {
		n.ext.ops = opsOf(ext, want)
	}
	return n
}

// WithExternalKinds tells the graph about kinds of external objects it may no longer declare any
// object of: pruning and deletion find there how to observe and delete an object recorded on the owner
// whose kind no node of the graph has. Kinds of declared nodes need not be listed.
func WithExternalKinds[S any](kinds ...External[S]) Option {
	return func(c *config) {
		for _, k := range kinds {
			var zero S
			c.externalKinds = append(c.externalKinds, opsOf(k, zero))
		}
	}
}

// ObserveEvery sets how often the external node is observed again once it holds its intent (default
// one minute); a node that is not ready yet is observed again sooner, after at most 10s.
// It does nothing on a cluster child, whose changes come as watch events.
func (n *Node) ObserveEvery(d time.Duration) *Node {
	if n.ext != nil && d > 0 {
		n.ext.interval = d
	}
	return n
}

// AdoptExisting lets the external node take over an object that exists but is not the owner's (no
// owner mark of it, not recorded on it): Apply then marks it as the owner's, and from then on it is
// the owner's in every way, deleted with it unless kept. Graph.Validate refuses it on a cluster child
// (see apply.WithAdoptOrphans).
func (n *Node) AdoptExisting() *Node {
	if n.ext == nil {
		n.adoptOnChild = true
		return n
	}
	n.ext.adopt = true
	return n
}

// External reports whether the node is an external one (AddExternal), with its kind and identity.
func (n *Node) External() (kind, id string, ok bool) {
	if n == nil || n.ext == nil {
		return "", "", false
	}
	return n.ext.ops.kind, n.ext.id, true
}

// validateExternal reports what is wrong with an external node.
func validateExternal(n *Node) error {
	e := n.ext
	switch {
	case e.ops.observe == nil:
		return fmt.Errorf("%w: external node %q has no External", ErrInvalidGraph, n.name)
	case e.ops.missing != "":
		return fmt.Errorf("%w: external node %q: its ExternalFuncs has no %s", ErrInvalidGraph, n.name, e.ops.missing)
	case e.ops.kind == "":
		return fmt.Errorf("%w: external node %q: its External's Kind is empty", ErrInvalidGraph, n.name)
	case e.id == "":
		return fmt.Errorf("%w: external node %q has an empty identity", ErrInvalidGraph, n.name)
	case e.badPolicy != "":
		return fmt.Errorf("%w: external node %q: deletion propagation %s applies to cluster children only; use KeepOnDelete to keep the object", ErrInvalidGraph, n.name, e.badPolicy)
	}
	if strings.ContainsRune(e.ops.kind, '/') {
		return fmt.Errorf("%w: external node %q: kind %q contains \"/\"", ErrInvalidGraph, n.name, e.ops.kind)
	}
	return nil
}

// applyExternal observes an external node whose dependencies are ready and creates or updates it when
// needed; waiting holds what the node waits for, if anything.
func (g *Graph) applyExternal(ctx context.Context, rec *record, n *Node) (cr ChildResult, waiting []string, err error) {
	cr.Name = n.name
	e := n.ext
	fail := func(step string, err error) (ChildResult, []string, error) {
		cr.Reason = step + " failed"
		err = fmt.Errorf("external node %q (%s %s): %s: %w", n.name, e.ops.kind, e.id, step, err)
		if step == "observe" {
			return cr, nil, nodeError(n.name, StepObserve, err)
		}
		return cr, nil, nodeError(n.name, StepApply, err)
	}
	obs, err := e.ops.observe(ctx, e.id)
	if err != nil {
		return fail("observe", err)
	}
	entry := ExternalRecord{Node: n.name, Kind: e.ops.kind, ID: e.id, Keep: e.keep, DependsOn: n.dependsOnMark()}
	switch {
	case !obs.Exists:
		if err := rec.add(ctx, entry); err != nil {
			return fail("record", err)
		}
		cr.Operation = apply.OperationCreated
	case rec.owns(obs, e.ops.kind, e.id):
		if obs.UpToDate {
			cr.Operation = apply.OperationUnchanged
			break
		}
		cr.Operation = apply.OperationUpdated
	case e.adopt:
		if err := rec.add(ctx, entry); err != nil {
			return fail("record", err)
		}
		cr.Operation = apply.OperationUpdated // taken over: marked as the owner's
	default:
		cr.Reason = "not the owner's"
		why := "it carries no owner mark"
		if obs.Owner != "" {
			why = fmt.Sprintf("its owner mark is %q", obs.Owner)
		}
		return cr, nil, fmt.Errorf("external node %q: %s %s %w (%s): not taken over; remove it, name another, or declare the node AdoptExisting",
			n.name, e.ops.kind, e.id, ErrNotOwned, why)
	}
	if cr.Operation != apply.OperationUnchanged {
		if err := seam.Of(rec.a).MayWrite(); err != nil {
			return fail("write", err)
		}
		step := "update"
		if cr.Operation == apply.OperationCreated {
			step = "create"
		}
		if err := e.ops.apply(ctx, e.id, obs, rec.mark()); err != nil {
			return fail(step, err)
		}
		if obs, err = e.ops.observe(ctx, e.id); err != nil {
			return fail("observe", err)
		}
	} else if !rec.holds(entry) {
		// Marked as the owner's but not recorded (a record lost with a restored owner), or its
		// deletion policy or dependencies changed: the record must say so for pruning and deletion.
		if err := rec.add(ctx, entry); err != nil {
			return fail("record", err)
		}
	}
	cr.Applied = true
	switch {
	case !obs.Exists:
		cr.Reason = "not created yet"
	case !obs.UpToDate:
		cr.Reason = orDefault(obs.Reason, "does not hold its intent yet")
	case !obs.Ready:
		cr.Reason = orDefault(obs.Reason, "not ready")
	default:
		cr.Ready = true
	}
	if !cr.Ready {
		waiting = []string{fmt.Sprintf("%s: %s", n.name, cr.Reason)}
	}
	return cr, waiting, nil
}

// observeAgain returns when the node asks to be observed again.
func (e *externalNode) observeAgain(ready bool) time.Duration {
	if ready {
		return e.interval
	}
	return min(e.interval, notReadyObserveInterval)
}

// deleteExternal deletes one external object of owner (or releases it when kept) and reports whether
// it is gone; an object that is not the owner's counts as gone and is left alone.
func deleteExternal(ctx context.Context, rec *record, ops externalOps, id string, keep bool) (gone bool, err error) {
	obs, err := ops.observe(ctx, id)
	if err != nil {
		return false, fmt.Errorf("observe: %w", err)
	}
	if !obs.Exists || !rec.owns(obs, ops.kind, id) {
		return true, nil
	}
	if err := seam.Of(rec.a).MayWrite(); err != nil {
		return false, err
	}
	if keep {
		if ops.release != nil {
			if err := ops.release(ctx, id); err != nil {
				return false, fmt.Errorf("release: %w", err)
			}
		}
		return true, nil
	}
	if err := ops.delete(ctx, id); err != nil {
		return false, fmt.Errorf("delete: %w", err)
	}
	obs, err = ops.observe(ctx, id) // gone only once the system says so
	if err != nil {
		return false, fmt.Errorf("observe after delete: %w", err)
	}
	return !obs.Exists, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// due reports whether the deletion of the i-th node is due: every node depending on it is gone.
func due(i int, dependents [][]int, gone []bool) bool {
	for _, j := range dependents[i] {
		if !gone[j] {
			return false
		}
	}
	return true
}

// kindOps returns the operations of kind: a declared node's, else those of WithExternalKinds.
func (g *Graph) kindOps(kind string) (externalOps, bool) {
	for _, n := range g.nodes {
		if n.ext != nil && n.ext.ops.kind == kind {
			return n.ext.ops, true
		}
	}
	for _, ops := range g.cfg.externalKinds {
		if ops.kind == kind {
			return ops, true
		}
	}
	return externalOps{}, false
}

// declares reports whether g declares the external object id of kind.
func (g *Graph) declares(kind, id string) bool {
	return slices.ContainsFunc(g.nodes, func(n *Node) bool { return n.ext != nil && n.ext.ops.kind == kind && n.ext.id == id })
}

// deleteUndeclared deletes, or releases when kept, the external objects recorded on the owner that g
// does not declare, and drops the entries of those gone when forget is set. It returns, as "node: kind
// id", those that still exist, and those that are gone.
func (g *Graph) deleteUndeclared(ctx context.Context, rec *record, forget bool) (left, gone []string, err error) {
	if rec.err != nil {
		return nil, nil, rec.err
	}
	var errs []error
	for _, e := range rec.list() {
		if g.declares(e.Kind, e.ID) {
			continue
		}
		name := fmt.Sprintf("%s: %s %s", e.Node, e.Kind, e.ID)
		ops, ok := g.kindOps(e.Kind)
		if !ok {
			errs = append(errs, fmt.Errorf("external object %s is recorded on the owner (%s) but the graph knows no kind %q: declare it with graph.WithExternalKinds", name, marks.External, e.Kind))
			left = append(left, name)
			continue
		}
		done, err := deleteExternal(ctx, rec, ops, e.ID, e.Keep)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("delete external object %s: %w", name, err))
			left = append(left, name)
		case !done:
			left = append(left, name)
		default:
			gone = append(gone, name)
			if forget {
				if err := rec.remove(ctx, e.Kind, e.ID); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return left, gone, errors.Join(errs...)
}

// PruneExternal deletes the external objects recorded on owner (marks.External) that g no longer
// declares, in no particular order, each only if it is owner's and released instead when it was kept
// (KeepOnDelete), and drops their entries once the external system confirms them gone. It returns
// them as "node: kind id". The kinds no node declares any more must be given to New with
// WithExternalKinds; an entry of an unknown kind is an error and is kept. Call it, as Prune, once the
// result of Apply is Ready.
func (g *Graph) PruneExternal(ctx context.Context, a *apply.Applier, owner client.Object) ([]string, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	_, gone, err := g.deleteUndeclared(ctx, newRecord(a, owner), true)
	return gone, err
}
