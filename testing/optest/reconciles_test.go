package optest

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	keyA = client.ObjectKey{Namespace: "ns", Name: "a"}
	keyB = client.ObjectKey{Namespace: "ns", Name: "b"}
	boom = errors.New("boom")
)

// script drives a Reconciles through steps, each a word and an object ("a" or "b") where it needs one:
//
//	start a   a reconcile of ns/a starts
//	end a     the reconcile of ns/a started last ends (end! a: with the error boom)
//	mark      the test takes a mark (the last one is returned)
//	expect a  an expectation for ns/a is registered (the last one is returned)
//	arm       the expectation's condition is set: the change is in the cache
//	cache     the change reaches the cache
//	drop      the expectation is dropped
type script struct {
	r       *Reconciles
	running map[string][]func(ctrl.Result, error)
	mark    Mark
	e       *expectation
	cached  atomic.Bool
}

func run(t *testing.T, steps []string) *script {
	t.Helper()
	s := &script{r: NewReconciles(), running: map[string][]func(ctrl.Result, error){}}
	keys := map[string]client.ObjectKey{"a": keyA, "b": keyB}
	for _, step := range steps {
		word, obj, _ := strings.Cut(step, " ")
		switch word {
		case "start":
			s.running[obj] = append(s.running[obj], s.r.Observe(t.Context(), ctrl.Request{NamespacedName: keys[obj]}))
		case "end", "end!":
			var err error
			if word == "end!" {
				err = boom
			}
			n := len(s.running[obj])
			s.running[obj][n-1](ctrl.Result{}, err)
			s.running[obj] = s.running[obj][:n-1]
		case "mark":
			s.mark = s.r.Mark()
		case "expect":
			s.e = s.r.expect(keys[obj])
		case "arm":
			s.r.arm(s.e, func(context.Context) bool { return s.cached.Load() })
		case "cache":
			s.cached.Store(true)
		case "drop":
			s.r.drop(s.e)
		default:
			t.Fatalf("unknown step %q", step)
		}
	}
	return s
}

func TestReconcilesSince(t *testing.T) {
	tests := map[string]struct {
		steps []string
		// since and finished are what Since(ns/a, mark) and finishedFrom(ns/a, mark+1) return.
		since    []Reconcile
		finished *Reconcile
	}{
		"nothing yet": {
			steps: []string{"mark"},
		},
		"a reconcile started before the mark does not count, even when it ends after it": {
			steps: []string{"start a", "mark", "end a"},
		},
		"a reconcile started after the mark counts once it has finished": {
			steps:    []string{"start a", "end a", "mark", "start a", "end a"},
			since:    []Reconcile{{Key: keyA, Started: 3, Finished: 4}},
			finished: &Reconcile{Key: keyA, Started: 3, Finished: 4},
		},
		"a running reconcile does not count yet": {
			steps: []string{"mark", "start a"},
			since: []Reconcile{{Key: keyA, Started: 1}},
		},
		"a reconcile of another object does not count": {
			steps: []string{"mark", "start b", "end b"},
		},
		"reconciles of other objects take marks too": {
			steps:    []string{"start b", "mark", "start a", "end b", "end a"},
			since:    []Reconcile{{Key: keyA, Started: 2, Finished: 4}},
			finished: &Reconcile{Key: keyA, Started: 2, Finished: 4},
		},
		"the first finished reconcile is returned, with its error": {
			steps:    []string{"mark", "start a", "end! a", "start a", "end a"},
			since:    []Reconcile{{Key: keyA, Started: 1, Finished: 2, Err: boom}, {Key: keyA, Started: 3, Finished: 4}},
			finished: &Reconcile{Key: keyA, Started: 1, Finished: 2, Err: boom},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := run(t, tc.steps)
			if diff := cmp.Diff(tc.since, s.r.Since(keyA, s.mark), cmpopts.EquateErrors()); diff != "" {
				t.Errorf("Since (-want +got):\n%s", diff)
			}
			got, ok := s.r.finishedFrom(keyA, s.mark+1)
			if diff := cmp.Diff(tc.finished, ptrIf(got, ok), cmpopts.EquateErrors()); diff != "" {
				t.Errorf("finished reconcile (-want +got):\n%s", diff)
			}
			if tc.finished != nil {
				if diff := cmp.Diff(*tc.finished, s.r.WaitFor(t, keyA, s.mark, time.Second), cmpopts.EquateErrors()); diff != "" {
					t.Errorf("WaitFor (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestReconcilesExpectation(t *testing.T) {
	tests := map[string]struct {
		steps []string
		want  *Reconcile // what met returns
	}{
		"a reconcile that starts and ends before the change reaches the cache does not count": {
			steps: []string{"expect a", "arm", "start a", "end a", "cache"},
		},
		"a reconcile that starts before the change reaches the cache does not count, even when it ends after": {
			steps: []string{"expect a", "arm", "start a", "cache", "end a"},
		},
		"the next one does": {
			steps: []string{"expect a", "arm", "start a", "cache", "end a", "start a", "end a"},
			want:  &Reconcile{Key: keyA, Started: 3, Finished: 4},
		},
		"a reconcile that starts once the cache shows the change counts when it has finished": {
			steps: []string{"expect a", "arm", "cache", "start a"},
		},
		"finished": {
			steps: []string{"expect a", "arm", "cache", "start a", "end! a"},
			want:  &Reconcile{Key: keyA, Started: 1, Finished: 2, Err: boom},
		},
		"the first of several is returned": {
			steps: []string{"expect a", "arm", "cache", "start a", "end a", "start a", "end a"},
			want:  &Reconcile{Key: keyA, Started: 1, Finished: 2},
		},
		"a reconcile of another object does not count": {
			steps: []string{"expect a", "arm", "cache", "start b", "end b"},
		},
		"a reconcile that started before the expectation does not count": {
			steps: []string{"start a", "expect a", "arm", "cache", "end a"},
		},
		"after a drop, nothing counts": {
			steps: []string{"expect a", "drop", "cache", "start a", "end a"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := run(t, tc.steps)
			got, ok := s.r.met(s.e)
			if diff := cmp.Diff(tc.want, ptrIf(got, ok), cmpopts.EquateErrors()); diff != "" {
				t.Errorf("met (-want +got):\n%s", diff)
			}
		})
	}
}

// TestObserveWaitsForTheTrigger starts a reconcile while the expectation is not armed (the trigger is
// still writing): the start waits, and counts only if the change is in the cache once it goes on.
func TestObserveWaitsForTheTrigger(t *testing.T) {
	tests := map[string]struct {
		release func(r *Reconciles, e *expectation, cancel context.CancelFunc)
		want    *Reconcile
	}{
		"armed, with the change in the cache": {
			release: func(r *Reconciles, e *expectation, _ context.CancelFunc) {
				r.arm(e, func(context.Context) bool { return true })
			},
			want: &Reconcile{Key: keyA, Started: 1, Finished: 2},
		},
		"armed, without the change in the cache": {
			release: func(r *Reconciles, e *expectation, _ context.CancelFunc) {
				r.arm(e, func(context.Context) bool { return false })
			},
		},
		"dropped (the trigger failed)": {
			release: func(r *Reconciles, e *expectation, _ context.CancelFunc) { r.drop(e) },
		},
		"the reconcile's context ends (the manager stops)": {
			release: func(_ *Reconciles, _ *expectation, cancel context.CancelFunc) { cancel() },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := NewReconciles()
			e := r.expect(keyA)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			started := make(chan func(ctrl.Result, error))
			go func() { started <- r.Observe(ctx, ctrl.Request{NamespacedName: keyA}) }()
			waitUntil(t, func() bool { return waiting(r, e) == 1 })
			select {
			case <-started:
				t.Fatal("the reconcile started before the trigger returned")
			default:
			}
			tc.release(r, e, cancel)
			(<-started)(ctrl.Result{}, nil)
			got, ok := r.met(e)
			if diff := cmp.Diff(tc.want, ptrIf(got, ok)); diff != "" {
				t.Errorf("met (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAtLeast(t *testing.T) {
	tests := []struct {
		have, want string
		ok         bool
	}{
		{"12", "12", true},
		{"13", "12", true},
		{"11", "12", false},
		{"100", "99", true}, // numbers, not strings
		{"9", "10", false},
		{"x1", "x1", true}, // not numbers: only equality
		{"x2", "x1", false},
		{"", "12", false},
	}
	for _, tc := range tests {
		if got := atLeast(tc.have, tc.want); got != tc.ok {
			t.Errorf("atLeast(%q, %q) = %v, want %v", tc.have, tc.want, got, tc.ok)
		}
	}
}

func TestRegarding(t *testing.T) {
	event := func(name, kind, regarding string) eventsv1.Event {
		e := eventsv1.Event{Regarding: corev1.ObjectReference{Kind: kind, Name: regarding}}
		e.Name = name
		return e
	}
	events := []eventsv1.Event{
		event("1", "Welcome", "alice"),
		event("2", "Service", "alice"), // kube-apiserver's repair loop, about the Service of the same name
		event("3", "Welcome", "bob"),
		event("4", "Welcome", "alice"),
	}
	var got []string
	for _, e := range regarding(events, "Welcome", "alice") {
		got = append(got, e.Name)
	}
	if diff := cmp.Diff([]string{"1", "4"}, got); diff != "" {
		t.Errorf("events about Welcome alice (-want +got):\n%s", diff)
	}
}

func ptrIf(r Reconcile, ok bool) *Reconcile {
	if !ok {
		return nil
	}
	return &r
}

// waiting returns how many starts have waited for e to be armed.
func waiting(r *Reconciles, e *expectation) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return e.waiting
}

// waitUntil polls cond until it holds, failing the test after 10 seconds.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}
