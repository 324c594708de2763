package optest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/convergo-dev/convergo/reconcile/graph"
)

// things is an External of objects held in memory, without Release. Each method logs its call and
// fails with fail, if set.
type things struct {
	mu      sync.Mutex
	objects map[string]string // id: owner
	log     []string
	fail    error
}

func (s *things) Kind() string { return "mem.thing" }

func (s *things) Observe(_ context.Context, id string, want int) (graph.Observation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, "observe "+id)
	owner, ok := s.objects[id]
	return graph.Observation{Exists: ok, Owner: owner, UpToDate: ok && want > 0, Ready: ok}, s.fail
}

func (s *things) Apply(_ context.Context, id string, _ int, _ graph.Observation, owner string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, "apply "+id)
	if s.fail != nil {
		return s.fail
	}
	if s.objects == nil {
		s.objects = map[string]string{}
	}
	s.objects[id] = owner
	return nil
}

func (s *things) Delete(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, "delete "+id)
	delete(s.objects, id)
	return s.fail
}

func (s *things) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log
}

// keptThings is things with Release.
type keptThings struct{ things }

func (s *keptThings) Release(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, "release "+id)
	s.objects[id] = ""
	return s.fail
}

var ignoreTime = cmpopts.IgnoreFields(Call{}, "Time")

// TestCountExternalKeepsReleaser checks that the wrapper implements graph.Releaser exactly when the
// wrapped External does, and that its Kind is the wrapped one's.
func TestCountExternalKeepsReleaser(t *testing.T) {
	cases := map[string]struct {
		ext  graph.External[int]
		want bool
	}{
		"without Release": {ext: &things{}, want: false},
		"with Release":    {ext: &keptThings{}, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			counted := CountExternal(NewExternalCounter(), tc.ext)
			if _, got := counted.(graph.Releaser); got != tc.want {
				t.Errorf("the counted External implements graph.Releaser: %v, want %v", got, tc.want)
			}
			if got := counted.Kind(); got != "mem.thing" {
				t.Errorf("Kind() = %q, want mem.thing", got)
			}
		})
	}
}

// TestCountExternalRecords makes each call through the wrapper and checks what it passed on, what it
// returned and what the counter recorded, in order and with times.
func TestCountExternalRecords(t *testing.T) {
	inner := &keptThings{}
	c := NewExternalCounter()
	ext := CountExternal(c, graph.External[int](inner))
	ctx := t.Context()

	before := time.Now()
	if obs, err := ext.Observe(ctx, "a", 1); err != nil || obs.Exists {
		t.Fatalf("Observe of a missing object = %+v, %v; want it missing, no error", obs, err)
	}
	if err := ext.Apply(ctx, "a", 1, graph.Observation{}, "owner-1"); err != nil {
		t.Fatal(err)
	}
	obs, err := ext.Observe(ctx, "a", 1)
	if diff := cmp.Diff(graph.Observation{Exists: true, Owner: "owner-1", UpToDate: true, Ready: true}, obs); err != nil || diff != "" {
		t.Fatalf("Observe after Apply: %v (-want +got):\n%s", err, diff)
	}
	if err := ext.(graph.Releaser).Release(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	inner.fail = boom
	if err := ext.Delete(ctx, "a"); !errors.Is(err, boom) {
		t.Fatalf("Delete = %v, want the wrapped External's error", err)
	}
	after := time.Now()

	if diff := cmp.Diff([]string{"observe a", "apply a", "observe a", "release a", "delete a"}, inner.calls()); diff != "" {
		t.Errorf("calls passed on (-want +got):\n%s", diff)
	}
	got := c.Snapshot()
	want := Calls{
		{Kind: "mem.thing", Step: StepObserve, ID: "a"},
		{Kind: "mem.thing", Step: StepApply, ID: "a"},
		{Kind: "mem.thing", Step: StepObserve, ID: "a"},
		{Kind: "mem.thing", Step: StepRelease, ID: "a"},
		{Kind: "mem.thing", Step: StepDelete, ID: "a", Err: boom},
	}
	if diff := cmp.Diff(want, got, ignoreTime, cmpopts.EquateErrors()); diff != "" {
		t.Errorf("recorded calls (-want +got):\n%s", diff)
	}
	for i, call := range got {
		prev := before
		if i > 0 {
			prev = got[i-1].Time
		}
		if call.Time.Before(prev) || call.Time.After(after) {
			t.Errorf("call %d (%s) made at %v: want it after %v and before %v", i, call.Step, call.Time, prev, after)
		}
	}

	counts := map[string]struct {
		kind string
		step Step
		want int
	}{
		"any":           {want: 5},
		"observe":       {step: StepObserve, want: 2},
		"kind and step": {kind: "mem.thing", step: StepApply, want: 1},
		"other kind":    {kind: "postgres.role", want: 0},
	}
	for name, tc := range counts {
		t.Run(name, func(t *testing.T) {
			if got := got.Count(tc.kind, tc.step); got != tc.want {
				t.Errorf("Count(%q, %q) = %d, want %d", tc.kind, tc.step, got, tc.want)
			}
		})
	}
	if diff := cmp.Diff(map[string]int{"mem.thing/observe": 2, "mem.thing/apply": 1, "mem.thing/release": 1, "mem.thing/delete": 1}, got.Counts()); diff != "" {
		t.Errorf("Counts (-want +got):\n%s", diff)
	}
	table := strings.Join([]string{
		"KIND       STEP     COUNT",
		"mem.thing  apply    1",
		"mem.thing  delete   1",
		"mem.thing  observe  2",
		"mem.thing  release  1",
		"total               5",
		"",
	}, "\n")
	if diff := cmp.Diff(table, got.String()); diff != "" {
		t.Errorf("String (-want +got):\n%s", diff)
	}

	c.Reset()
	if n := len(c.Snapshot()); n != 0 {
		t.Errorf("after Reset, %d calls recorded; want none", n)
	}
	if n := len(got); n != 5 {
		t.Errorf("Reset changed an earlier snapshot: %d calls, want 5", n)
	}
}

// TestExternalCounterOnCall checks the function OnCall sets: it sees each call before the wrapped
// External does, an error from it replaces the call, and a call it holds reaches the External only
// once it lets go.
func TestExternalCounterOnCall(t *testing.T) {
	refused := errors.New("refused by the test")
	cases := map[string]struct {
		onCall     func(ctx context.Context, call Call) error
		wantPassed []string
		wantErr    error
	}{
		"passes every call": {
			onCall:     func(context.Context, Call) error { return nil },
			wantPassed: []string{"apply a", "delete a"},
		},
		"refuses the apply": {
			onCall: func(_ context.Context, call Call) error {
				if call.Step == StepApply {
					return refused
				}
				return nil
			},
			wantPassed: []string{"delete a"},
			wantErr:    refused,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			inner := &things{}
			c := NewExternalCounter()
			var seen []string
			c.OnCall(func(ctx context.Context, call Call) error {
				seen = append(seen, string(call.Step)+" "+call.ID)
				return tc.onCall(ctx, call)
			})
			ext := CountExternal(c, graph.External[int](inner))
			if err := ext.Apply(t.Context(), "a", 1, graph.Observation{}, "o"); !errors.Is(err, tc.wantErr) {
				t.Errorf("Apply = %v, want %v", err, tc.wantErr)
			}
			if err := ext.Delete(t.Context(), "a"); err != nil {
				t.Errorf("Delete = %v", err)
			}
			if diff := cmp.Diff([]string{"apply a", "delete a"}, seen); diff != "" {
				t.Errorf("calls OnCall saw (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPassed, inner.calls()); diff != "" {
				t.Errorf("calls passed on (-want +got):\n%s", diff)
			}
			want := Calls{{Kind: "mem.thing", Step: StepApply, ID: "a", Err: tc.wantErr}, {Kind: "mem.thing", Step: StepDelete, ID: "a"}}
			if diff := cmp.Diff(want, c.Snapshot(), ignoreTime, cmpopts.EquateErrors()); diff != "" {
				t.Errorf("recorded calls (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("holds a call midway", func(t *testing.T) {
		inner := &things{}
		c := NewExternalCounter()
		reached, resume := make(chan Call), make(chan struct{})
		c.OnCall(func(ctx context.Context, call Call) error {
			if call.Step != StepApply {
				return nil
			}
			reached <- call
			select {
			case <-resume:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		ext := CountExternal(c, graph.External[int](inner))
		done := make(chan error, 1)
		go func() { done <- ext.Apply(t.Context(), "a", 1, graph.Observation{}, "o") }()

		held := <-reached
		// The step is under way: here a test breaks what the External talks to.
		if n := len(inner.calls()); n != 0 {
			t.Errorf("while OnCall holds the apply, the External got %d calls; want none", n)
		}
		if n := len(c.Snapshot()); n != 0 {
			t.Errorf("while OnCall holds the apply, %d calls are recorded; want none (a call is recorded once it returns)", n)
		}
		close(resume)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"apply a"}, inner.calls()); diff != "" {
			t.Errorf("calls passed on (-want +got):\n%s", diff)
		}
		if got := c.Snapshot(); len(got) != 1 || !got[0].Time.Equal(held.Time) {
			t.Errorf("recorded %v; want the held apply, with the time OnCall saw (%v)", got, held.Time)
		}
	})

	t.Run("nil removes it", func(t *testing.T) {
		c := NewExternalCounter()
		c.OnCall(func(context.Context, Call) error { return refused })
		c.OnCall(nil)
		if err := CountExternal(c, graph.External[int](&things{})).Delete(t.Context(), "a"); err != nil {
			t.Errorf("Delete after OnCall(nil) = %v, want nil", err)
		}
	})
}

// TestExternalCounterConcurrent counts calls made from many goroutines at once (run with -race).
func TestExternalCounterConcurrent(t *testing.T) {
	var zero ExternalCounter // the zero value is ready
	ext := CountExternal(&zero, graph.External[int](&keptThings{}))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				_, _ = ext.Observe(t.Context(), "a", 1)
				_ = ext.Delete(t.Context(), "a")
			}
		})
	}
	wg.Wait()
	if diff := cmp.Diff(map[string]int{"mem.thing/observe": 400, "mem.thing/delete": 400}, zero.Snapshot().Counts()); diff != "" {
		t.Errorf("Counts (-want +got):\n%s", diff)
	}
}
