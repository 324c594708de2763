package fakes

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Verbs of client calls, as recorded in Op.Verb.
const (
	VerbGet         = "get"
	VerbList        = "list"
	VerbWatch       = "watch"
	VerbCreate      = "create"
	VerbUpdate      = "update"
	VerbPatch       = "patch"
	VerbApply       = "apply"
	VerbDelete      = "delete"
	VerbDeleteAllOf = "deletecollection"
)

// Op describes one call made through a Client.
type Op struct {
	// Verb is one of the Verb constants: VerbApply for Apply and for a Patch with an apply patch.
	Verb string
	// Kind is the object's kind ("" when it cannot be determined, e.g. some apply configurations); for
	// list and watch calls it is the item kind (ConfigMap, not ConfigMapList).
	Kind string
	// Subresource is e.g. "status" for calls through Status() or SubResource(...).
	Subresource string
	// Namespace and Name identify the object (Name is empty for list, watch and deletecollection).
	Namespace, Name string
}

// IsWrite reports whether op changes state: create, update, patch, apply, delete, deletecollection.
func (op Op) IsWrite() bool {
	switch op.Verb {
	case VerbCreate, VerbUpdate, VerbPatch, VerbApply, VerbDelete, VerbDeleteAllOf:
		return true
	}
	return false
}

// Injected counts the faults a Client injected.
type Injected struct {
	// Conflicts is the number of calls answered with a Conflict error.
	Conflicts int
	// Errors is the number of calls answered with an error from WithError or WithFault.
	Errors int
	// Delayed is the number of calls delayed by WithLatency.
	Delayed int
}

// Option configures NewClient.
type Option func(*clientConfig)

type fault struct {
	match func(Op) bool
	err   error
}

type clientConfig struct {
	objects       []client.Object
	statusTypes   []client.Object
	conflictEvery int
	conflictRate  float64
	seed          uint64
	conflictOn    func(Op) bool
	faults        []fault
	latency       time.Duration
	builder       []func(*fake.ClientBuilder)
}

// WithObjects seeds the client with objects. Their types get the status subresource when they have a
// Status field (or are unstructured), as CRDs with subresources.status do.
func WithObjects(objs ...client.Object) Option {
	return func(c *clientConfig) { c.objects = append(c.objects, objs...) }
}

// WithStatusSubresource enables the status subresource for the types of objs, also when no object of
// that type is seeded: Update and Patch then leave status alone and Status() writes only status. The
// in-tree types that have it on a real API server (Deployment, Pod, ...) always have it.
func WithStatusSubresource(objs ...client.Object) Option {
	return func(c *clientConfig) { c.statusTypes = append(c.statusTypes, objs...) }
}

// WithConflictEvery answers every nth update, patch and apply call (status writes included) with a
// Conflict error, as the API server does for a stale resourceVersion. The other calls pass.
func WithConflictEvery(n int) Option {
	return func(c *clientConfig) { c.conflictEvery = n }
}

// WithConflictRate answers a fraction rate (0..1) of update, patch and apply calls with a Conflict
// error, chosen by a random source seeded with seed so that a test is repeatable.
func WithConflictRate(rate float64, seed uint64) Option {
	return func(c *clientConfig) {
		c.conflictRate = rate
		c.seed = seed
	}
}

// WithConflictsOn restricts WithConflictEvery and WithConflictRate to the calls for which match returns
// true (default: update, patch and apply calls).
func WithConflictsOn(match func(Op) bool) Option {
	return func(c *clientConfig) { c.conflictOn = match }
}

// WithError answers every call with the verb (one of the Verb constants, "" for any) on objects of the
// kind ("" for any; "Kind/subresource" for a subresource only) with err, without performing it.
func WithError(verb, kind string, err error) Option {
	return WithFault(func(op Op) bool {
		if verb != "" && op.Verb != verb {
			return false
		}
		if kind == "" {
			return true
		}
		k, sub, hasSub := strings.Cut(kind, "/")
		return op.Kind == k && (!hasSub || op.Subresource == sub)
	}, err)
}

// WithFault answers the calls for which match returns true with err, without performing them. Faults
// are checked in the order given, before conflicts.
func WithFault(match func(Op) bool, err error) Option {
	return func(c *clientConfig) { c.faults = append(c.faults, fault{match: match, err: err}) }
}

// WithLatency delays every call by d (or until its context ends).
func WithLatency(d time.Duration) Option {
	return func(c *clientConfig) { c.latency = d }
}

// WithBuilder adjusts the underlying controller-runtime fake.ClientBuilder, e.g. to add indexes.
func WithBuilder(f func(*fake.ClientBuilder)) Option {
	return func(c *clientConfig) { c.builder = append(c.builder, f) }
}

// Client is a controller-runtime fake client with the status subresource enabled for the seeded
// types and optional fault injection. It records every call. It is for unit tests of pure logic; API
// server behaviour (defaulting, server-side apply, validation, finalizers, garbage collection) needs the
// real API server of testing/harness.
type Client struct {
	client.WithWatch

	scheme *runtime.Scheme
	cfg    clientConfig

	mu       sync.Mutex
	rnd      *rand.Rand
	writes   int
	calls    []Op
	injected Injected
}

// NewClient returns a fake client using scheme (nil: client-go's scheme).
func NewClient(scheme *runtime.Scheme, opts ...Option) *Client {
	var cfg clientConfig
	for _, o := range opts {
		o(&cfg)
	}
	if scheme == nil {
		scheme = clientgoscheme.Scheme
	}
	statusTypes := append([]client.Object(nil), cfg.statusTypes...)
	for _, obj := range cfg.objects {
		if hasStatus(obj) {
			statusTypes = append(statusTypes, obj)
		}
	}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cfg.objects...).WithStatusSubresource(statusTypes...)
	for _, f := range cfg.builder {
		f(b)
	}
	c := &Client{scheme: scheme, cfg: cfg, rnd: rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15))}
	c.WithWatch = interceptor.NewClient(b.Build(), c.funcs())
	return c
}

// Calls returns every call made so far, oldest first (including the ones answered with a fault).
func (c *Client) Calls() []Op {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Op(nil), c.calls...)
}

// Writes returns how many of the calls so far were writes.
func (c *Client) Writes() int {
	n := 0
	for _, op := range c.Calls() {
		if op.IsWrite() {
			n++
		}
	}
	return n
}

// Injected returns the counts of injected faults.
func (c *Client) Injected() Injected {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.injected
}

// ResetCalls forgets the recorded calls (the fault counters keep counting).
func (c *Client) ResetCalls() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = nil
}

// hasStatus reports whether obj's type has a status to protect: a Status struct field, or any
// unstructured object.
func hasStatus(obj client.Object) bool {
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return true
	}
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	_, ok := t.FieldByName("Status")
	return ok
}

// before runs for every call: it records op, waits for the latency and returns the fault to answer
// with, if any.
func (c *Client) before(ctx context.Context, op Op) error {
	c.mu.Lock()
	c.calls = append(c.calls, op)
	c.mu.Unlock()

	if c.cfg.latency > 0 {
		c.mu.Lock()
		c.injected.Delayed++
		c.mu.Unlock()
		t := time.NewTimer(c.cfg.latency)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	for _, f := range c.cfg.faults {
		if f.match(op) {
			c.mu.Lock()
			c.injected.Errors++
			c.mu.Unlock()
			return f.err
		}
	}
	if c.conflict(op) {
		return c.conflictError(op)
	}
	return nil
}

// conflict decides whether op gets a Conflict.
func (c *Client) conflict(op Op) bool {
	if c.cfg.conflictEvery <= 0 && c.cfg.conflictRate <= 0 {
		return false
	}
	eligible := op.Verb == VerbUpdate || op.Verb == VerbPatch || op.Verb == VerbApply
	if c.cfg.conflictOn != nil {
		eligible = c.cfg.conflictOn(op)
	}
	if !eligible {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	hit := false
	if c.cfg.conflictEvery > 0 && c.writes%c.cfg.conflictEvery == 0 {
		hit = true
	}
	if c.cfg.conflictRate > 0 && c.rnd.Float64() < c.cfg.conflictRate {
		hit = true
	}
	if hit {
		c.injected.Conflicts++
	}
	return hit
}

func (c *Client) conflictError(op Op) error {
	gr := schema.GroupResource{Resource: strings.ToLower(op.Kind)}
	if op.Kind != "" {
		plural, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Kind: op.Kind})
		gr.Resource = plural.Resource
	}
	return apierrors.NewConflict(gr, op.Name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
}

// kindOf returns obj's kind, trimming List for lists.
func (c *Client) kindOf(obj runtime.Object) string {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return ""
	}
	if _, isList := obj.(client.ObjectList); isList {
		return strings.TrimSuffix(gvk.Kind, "List")
	}
	return gvk.Kind
}

func (c *Client) op(verb string, obj runtime.Object, sub string) Op {
	op := Op{Verb: verb, Kind: c.kindOf(obj), Subresource: sub}
	if o, ok := obj.(client.Object); ok {
		op.Namespace, op.Name = o.GetNamespace(), o.GetName()
	}
	return op
}

// applyOp describes an apply call from its apply configuration, as far as it tells.
func applyOp(obj runtime.ApplyConfiguration, sub string) Op {
	op := Op{Verb: VerbApply, Subresource: sub}
	if k, ok := obj.(interface{ GetKind() *string }); ok && k.GetKind() != nil {
		op.Kind = *k.GetKind()
	}
	if n, ok := obj.(interface{ GetName() *string }); ok && n.GetName() != nil {
		op.Name = *n.GetName()
	}
	if n, ok := obj.(interface{ GetNamespace() *string }); ok && n.GetNamespace() != nil {
		op.Namespace = *n.GetNamespace()
	}
	return op
}

func listNamespace(opts []client.ListOption) string {
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	return lo.Namespace
}

func (c *Client) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			op := c.op(VerbGet, obj, "")
			op.Namespace, op.Name = key.Namespace, key.Name
			if err := c.before(ctx, op); err != nil {
				return err
			}
			return cl.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			op := c.op(VerbList, list, "")
			op.Namespace, op.Name = listNamespace(opts), ""
			if err := c.before(ctx, op); err != nil {
				return err
			}
			return cl.List(ctx, list, opts...)
		},
		Watch: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
			op := c.op(VerbWatch, list, "")
			op.Namespace, op.Name = listNamespace(opts), ""
			if err := c.before(ctx, op); err != nil {
				return nil, err
			}
			return cl.Watch(ctx, list, opts...)
		},
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := c.before(ctx, c.op(VerbCreate, obj, "")); err != nil {
				return err
			}
			return cl.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := c.before(ctx, c.op(VerbUpdate, obj, "")); err != nil {
				return err
			}
			return cl.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if patch.Type() == types.ApplyPatchType {
				if err := c.before(ctx, c.op(VerbApply, obj, "")); err != nil {
					return err
				}
				return ApplyPatch(ctx, cl, obj, patch, opts...)
			}
			if err := c.before(ctx, c.op(VerbPatch, obj, "")); err != nil {
				return err
			}
			return cl.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, cl client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if err := c.before(ctx, applyOp(obj, "")); err != nil {
				return err
			}
			return cl.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if err := c.before(ctx, c.op(VerbDelete, obj, "")); err != nil {
				return err
			}
			return cl.Delete(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			op := c.op(VerbDeleteAllOf, obj, "")
			do := &client.DeleteAllOfOptions{}
			do.ApplyOptions(opts)
			op.Namespace, op.Name = do.Namespace, ""
			if err := c.before(ctx, op); err != nil {
				return err
			}
			return cl.DeleteAllOf(ctx, obj, opts...)
		},
		SubResourceGet: func(ctx context.Context, cl client.Client, sub string, obj client.Object, subObj client.Object, opts ...client.SubResourceGetOption) error {
			if err := c.before(ctx, c.op(VerbGet, obj, sub)); err != nil {
				return err
			}
			return cl.SubResource(sub).Get(ctx, obj, subObj, opts...)
		},
		SubResourceCreate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			if err := c.before(ctx, c.op(VerbCreate, obj, sub)); err != nil {
				return err
			}
			return cl.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := c.before(ctx, c.op(VerbUpdate, obj, sub)); err != nil {
				return err
			}
			return cl.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := c.before(ctx, c.op(VerbPatch, obj, sub)); err != nil {
				return err
			}
			return cl.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		SubResourceApply: func(ctx context.Context, cl client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			if err := c.before(ctx, applyOp(obj, sub)); err != nil {
				return err
			}
			return cl.SubResource(sub).Apply(ctx, obj, opts...)
		},
	}
}

// String summarises the counters, for test logs.
func (i Injected) String() string {
	return fmt.Sprintf("conflicts=%d errors=%d delayed=%d", i.Conflicts, i.Errors, i.Delayed)
}
