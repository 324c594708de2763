package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/convergo-dev/convergo/internal/testapi"
)

// TestWorkerGate: each lane lets in as many reconciles as it has places, whatever the other lane
// holds; a full lane makes the next one wait (here: fail, its context being done) until a place is
// given back; a nil gate lets everything in.
func TestWorkerGate(t *testing.T) {
	done, cancel := context.WithCancel(t.Context())
	cancel()
	type entry struct {
		deleting bool
		want     bool // let in without waiting
	}
	cases := map[string]struct {
		gate    *workerGate
		entries []entry
	}{
		"two places for the others, three for deletions": {gate: newWorkerGate(2, 3), entries: []entry{
			{false, true}, {false, true}, {false, false}, // the others' lane is full
			{true, true}, {true, true}, {true, true}, {true, false}, // deletions still get their three
		}},
		"deletions first": {gate: newWorkerGate(1, 1), entries: []entry{
			{true, true}, {true, false}, {false, true}, {false, false},
		}},
		"no gate": {entries: []entry{{false, true}, {false, true}, {true, true}, {true, true}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got, want []bool
			var releases []func()
			for _, e := range tc.entries {
				release, _, err := tc.gate.enter(done, e.deleting)
				got = append(got, err == nil)
				want = append(want, e.want)
				if err == nil {
					releases = append(releases, release)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("let in (-want +got):\n%s", diff)
			}
			// Every place given back: each lane is open again.
			for _, release := range releases {
				release()
			}
			for _, deleting := range []bool{false, true} {
				if _, waited, err := tc.gate.enter(done, deleting); err != nil || waited {
					t.Errorf("deleting=%v after every release: waited %v, %v", deleting, waited, err)
				}
			}
		})
	}
}

// TestWorkerGateWaits: a reconcile waiting for a full lane gets in once a place is given back.
func TestWorkerGateWaits(t *testing.T) {
	g := newWorkerGate(1, 1)
	release, _, err := g.enter(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan error)
	go func() {
		rel, _, err := g.enter(t.Context(), true)
		if err == nil {
			rel()
		}
		entered <- err
	}()
	release()
	if err := <-entered; err != nil {
		t.Fatal(err)
	}
}

// TestWorkerGateNotEntered: a reconcile waiting at a full lane when its context ends asks to run again
// if the context was canceled (the manager stopping), and fails if it timed out.
func TestWorkerGateNotEntered(t *testing.T) {
	cases := map[string]struct {
		ctx     func(context.Context) (context.Context, context.CancelFunc)
		want    ctrl.Result
		wantErr error
	}{
		"canceled": {
			ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(ctx)
				cancel()
				return ctx, cancel
			},
			want: ctrl.Result{RequeueAfter: notEnteredRequeue},
		},
		"timed out": {
			ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(ctx, time.Millisecond)
			},
			wantErr: context.DeadlineExceeded,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := newWorkerGate(1, 1)
			release, _, err := g.enter(t.Context(), false)
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			ctx, cancel := tc.ctx(t.Context())
			defer cancel()
			_, waited, err := g.enter(ctx, false)
			if !waited {
				t.Error("entered a full lane without waiting")
			}
			got, err := notEntered(err)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAdmitSwitchesLane: a reconcile that read a live object and waited for the others' only place
// reads it again; when its deletion started meanwhile, the reconcile holds a deletion place, not the
// others' one. One whose object was not deleted keeps its lane, and one whose object is gone holds none.
func TestAdmitSwitchesLane(t *testing.T) {
	live := &testapi.Widget{}
	deleting := &testapi.Widget{}
	deleting.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
	cases := map[string]struct {
		reread       *testapi.Widget
		wantDeleting bool // holds a deletion place
		wantGone     bool
	}{
		"deletion started during the wait": {reread: deleting, wantDeleting: true},
		"still live":                       {reread: live},
		"gone":                             {reread: nil, wantGone: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := newWorkerGate(1, 1)
			waiting := make(chan struct{})
			var once sync.Once
			g.onWait = func() { once.Do(func() { close(waiting) }) }
			hold, _, err := g.enter(t.Context(), false)
			if err != nil {
				t.Fatal(err)
			}
			type admitted struct {
				obj     *testapi.Widget
				release func()
				err     error
			}
			done := make(chan admitted)
			go func() {
				obj, release, err := admit(t.Context(), g, live, func() (*testapi.Widget, error) { return tc.reread, nil })
				done <- admitted{obj, release, err}
			}()
			<-waiting
			hold() // the others' place is free: the waiting reconcile goes on
			got := <-done
			if got.err != nil {
				t.Fatal(got.err)
			}
			if diff := cmp.Diff(tc.wantGone, got.release == nil); diff != "" {
				t.Fatalf("gone (-want +got):\n%s", diff)
			}
			if tc.wantGone {
				return
			}
			defer got.release()
			if diff := cmp.Diff(tc.reread == deleting, got.obj == deleting); diff != "" {
				t.Errorf("returned the object read after the wait (-want +got):\n%s", diff)
			}
			// The lane it holds is full; the other one is free.
			_, waitedDeleting, _ := g.enter(canceled(t), true)
			_, waitedOthers, _ := g.enter(canceled(t), false)
			if diff := cmp.Diff([]bool{tc.wantDeleting, !tc.wantDeleting}, []bool{waitedDeleting, waitedOthers}); diff != "" {
				t.Errorf("lanes full [deleting, others] (-want +got):\n%s", diff)
			}
		})
	}
}

// canceled returns a context that is already done: enter then fails at once on a full lane.
func canceled(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}

// gateWaitRuns numbers the runs of TestGateTellsWaits (go test -count).
var gateWaitRuns atomic.Int64

// TestGateTellsWaits: every place taken is recorded in convergo_reconcile_wait_seconds under its
// lane, with the time the reconcile waited for it (0 when a place was free).
func TestGateTellsWaits(t *testing.T) {
	controller := fmt.Sprintf("gate-waits-%d", gateWaitRuns.Add(1)) // the histogram is the process's
	m := newReconcilerMetrics(controller)
	g := newWorkerGate(1, 1)
	g.waited = m.placeTaken
	var ticks time.Duration
	g.now = func() time.Time { ticks += time.Second; return time.Unix(0, 0).Add(ticks) } // a second per look
	waiting := make(chan struct{})
	g.onWait = func() { close(waiting) }

	hold, _, err := g.enter(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan error)
	go func() {
		release, _, err := g.enter(t.Context(), false)
		if err == nil {
			release()
		}
		entered <- err
	}()
	<-waiting
	hold()
	if err := <-entered; err != nil {
		t.Fatal(err)
	}
	release, _, err := g.enter(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	release()

	type observed struct {
		Count uint64
		Sum   float64
	}
	got := map[string]observed{}
	for _, lane := range []string{laneOthers, laneDeleting} {
		var out dto.Metric
		if err := placeWaitSeconds.WithLabelValues(controller, lane).(prometheus.Metric).Write(&out); err != nil {
			t.Fatal(err)
		}
		got[lane] = observed{out.GetHistogram().GetSampleCount(), out.GetHistogram().GetSampleSum()}
	}
	want := map[string]observed{laneOthers: {Count: 2, Sum: 1}, laneDeleting: {Count: 1, Sum: 0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("convergo_reconcile_wait_seconds by lane (-want +got):\n%s", diff)
	}
}
