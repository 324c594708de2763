package optest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/convergo-dev/convergo/reconcile/graph"
)

// Step names the method of a graph.External (or graph.Releaser) that a Call went to.
type Step string

// The steps of an External that an ExternalCounter counts. Kind is not counted: the graph reads it
// when a node is declared, not as a step of a reconcile.
const (
	StepObserve Step = "observe"
	StepApply   Step = "apply"
	StepDelete  Step = "delete"
	StepRelease Step = "release"
)

// Call is one call to an External that CountExternal wrapped.
type Call struct {
	// Kind is the External's Kind.
	Kind string
	// Step is the method called.
	Step Step
	// ID is the identity of the object the call was about.
	ID string
	// Time is when the call was made (before the ExternalCounter's OnCall function ran), from
	// time.Now: it carries the monotonic clock reading, so it orders the call against
	// harness.Request.Time and other times taken in this process.
	Time time.Time
	// Err is the error the call returned (or OnCall's function returned in its place), nil when it
	// succeeded.
	Err error
}

// Calls is a list of recorded calls, in the order they returned.
type Calls []Call

// Count returns how many calls went to step of kind. An empty kind or step matches any.
func (cs Calls) Count(kind string, step Step) int {
	return len(cs.Filter(func(c Call) bool {
		return (kind == "" || c.Kind == kind) && (step == "" || c.Step == step)
	}))
}

// Filter returns the calls for which keep returns true.
func (cs Calls) Filter(keep func(Call) bool) Calls {
	var out Calls
	for _, c := range cs {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

// Counts returns the number of calls per "kind/step" (a kind holds no "/"), such as
// "postgres.role/apply", for a test to compare whole with cmp.Diff.
func (cs Calls) Counts() map[string]int {
	out := map[string]int{}
	for _, c := range cs {
		out[c.Kind+"/"+string(c.Step)]++
	}
	return out
}

// String renders a table of counts per kind and step, for test logs.
func (cs Calls) String() string {
	counts := cs.Counts()
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "KIND\tSTEP\tCOUNT")
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		kind, step, _ := strings.Cut(k, "/")
		fmt.Fprintf(w, "%s\t%s\t%d\n", kind, step, counts[k])
	}
	fmt.Fprintf(w, "total\t\t%d\n", len(cs))
	w.Flush()
	return b.String()
}

// ExternalCounter records the calls made to the Externals that CountExternal wrapped with it, as
// harness.RequestCounter records API requests. It is safe for concurrent use; the zero value is ready.
type ExternalCounter struct {
	mu     sync.Mutex
	calls  Calls
	onCall func(ctx context.Context, call Call) error
}

// NewExternalCounter returns an empty counter.
func NewExternalCounter() *ExternalCounter { return &ExternalCounter{} }

// Snapshot returns a copy of the calls recorded so far.
func (c *ExternalCounter) Snapshot() Calls {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

// Reset forgets every recorded call, e.g. to start measuring after setup.
func (c *ExternalCounter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = nil
}

// OnCall sets a function that runs before each call is passed on to the wrapped External, on the
// caller's goroutine, with the call as it will be recorded (without Err). It may block, to hold the
// call while the test breaks something (kills a server, say) and so break the step midway. When it
// returns an error, the call is not passed on and returns that error instead. nil removes the
// function.
func (c *ExternalCounter) OnCall(f func(ctx context.Context, call Call) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onCall = f
}

// do makes one call of kind: it takes the time, runs the OnCall function, passes the call on unless
// that failed, and records it.
func (c *ExternalCounter) do(ctx context.Context, kind string, step Step, id string, call func() error) error {
	rec := Call{Kind: kind, Step: step, ID: id, Time: time.Now()}
	c.mu.Lock()
	onCall := c.onCall
	c.mu.Unlock()
	if onCall != nil {
		rec.Err = onCall(ctx, rec)
	}
	if rec.Err == nil {
		rec.Err = call()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, rec)
	return rec.Err
}

// CountExternal returns ext with every call to Observe, Apply, Delete and (when ext has it) Release
// recorded by c, and passed on unchanged. The result implements graph.Releaser exactly when ext does,
// so the graph releases a kept object through it as it would through ext. ext and c must not be nil.
//
//	counter := optest.NewExternalCounter()
//	roles := optest.CountExternal(counter, roles(pool))
//	graph.AddExternal(g, "role", roles, "app", roleState{password: pw})
//	// ...
//	if n := counter.Snapshot().Count("postgres.role", optest.StepApply); n != 1 { ... }
func CountExternal[S any](c *ExternalCounter, ext graph.External[S]) graph.External[S] {
	counted := &countedExternal[S]{counter: c, ext: ext}
	if r, ok := ext.(graph.Releaser); ok {
		return &countedReleaser[S]{countedExternal: counted, releaser: r}
	}
	return counted
}

// countedExternal is an External whose calls are counted.
type countedExternal[S any] struct {
	counter *ExternalCounter
	ext     graph.External[S]
}

// Kind returns the wrapped External's kind.
func (e *countedExternal[S]) Kind() string { return e.ext.Kind() }

// Observe records the call and passes it on.
func (e *countedExternal[S]) Observe(ctx context.Context, id string, want S) (graph.Observation, error) {
	var obs graph.Observation
	err := e.counter.do(ctx, e.ext.Kind(), StepObserve, id, func() (err error) {
		obs, err = e.ext.Observe(ctx, id, want)
		return err
	})
	return obs, err
}

// Apply records the call and passes it on.
func (e *countedExternal[S]) Apply(ctx context.Context, id string, want S, found graph.Observation, owner string) error {
	return e.counter.do(ctx, e.ext.Kind(), StepApply, id, func() error { return e.ext.Apply(ctx, id, want, found, owner) })
}

// Delete records the call and passes it on.
func (e *countedExternal[S]) Delete(ctx context.Context, id string) error {
	return e.counter.do(ctx, e.ext.Kind(), StepDelete, id, func() error { return e.ext.Delete(ctx, id) })
}

// countedReleaser is a countedExternal of an External that implements graph.Releaser.
type countedReleaser[S any] struct {
	*countedExternal[S]
	releaser graph.Releaser
}

// Release records the call and passes it on.
func (e *countedReleaser[S]) Release(ctx context.Context, id string) error {
	return e.counter.do(ctx, e.ext.Kind(), StepRelease, id, func() error { return e.releaser.Release(ctx, id) })
}
