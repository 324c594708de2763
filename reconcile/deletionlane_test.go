package reconcile

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	ctrl "sigs.k8s.io/controller-runtime"
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
