package reconcile

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

// size returns the number of strings t holds.
func (t *stringTable) size() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.cur) + len(t.old)
}

// fresh returns s in an allocation of its own, as a decoder hands each object its strings.
func fresh(s string) string { return strings.Clone(s) }

func TestStringTable(t *testing.T) {
	type step struct {
		s       string        // the string to intern (a fresh copy of it)
		advance time.Duration // how far the clock moves before the step
	}
	cases := map[string]struct {
		minSize int
		minAge  time.Duration
		steps   []step
		// sameAs[i] = j: step i returns the same copy as step j; -1: a copy not returned before.
		sameAs   []int
		wantSize int
	}{
		"a string given twice is one copy": {
			minSize: 4, minAge: time.Minute,
			steps:    []step{{s: "app"}, {s: "app"}, {s: "web"}},
			sameAs:   []int{-1, 0, -1},
			wantSize: 2,
		},
		"a burst stays in one generation however large": {
			minSize: 2, minAge: time.Minute,
			steps:    []step{{s: "a"}, {s: "b"}, {s: "c"}, {s: "d"}, {s: "a"}, {s: "d"}},
			sameAs:   []int{-1, -1, -1, -1, 0, 3},
			wantSize: 4,
		},
		"a string given again while old moves on": {
			minSize: 2, minAge: time.Minute,
			// a, b and c retire at c (a minute later); a moves on, and outlives b.
			steps:    []step{{s: "a"}, {s: "b"}, {s: "c", advance: time.Minute}, {s: "a"}, {s: "d", advance: time.Minute}, {s: "e"}, {s: "a"}, {s: "b", advance: time.Minute}},
			sameAs:   []int{-1, -1, -1, 0, -1, -1, 0, -1},
			wantSize: 5, // old: a, d, e; cur: a, b (b came back after its generation was dropped)
		},
		"a string nobody gave for a generation is dropped": {
			minSize: 2, minAge: time.Minute,
			steps:    []step{{s: "a"}, {s: "b", advance: time.Minute}, {s: "c"}, {s: "d", advance: time.Minute}, {s: "a"}},
			sameAs:   []int{-1, -1, -1, -1, -1},
			wantSize: 3, // old: c, d; cur: a
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
			table := newStringTable(tc.minSize, tc.minAge, func() time.Time { return now })
			var got []string
			sameAs := make([]int, 0, len(tc.steps))
			for i, st := range tc.steps {
				now = now.Add(st.advance)
				in := fresh(st.s)
				out := table.intern(in)
				if out != st.s {
					t.Fatalf("step %d: intern(%q) = %q", i, st.s, out)
				}
				same := -1
				for j, prev := range got {
					if unsafe.StringData(prev) == unsafe.StringData(out) {
						same = j
						break
					}
				}
				sameAs = append(sameAs, same)
				got = append(got, out)
			}
			if diff := cmp.Diff(tc.sameAs, sameAs); diff != "" {
				t.Errorf("which earlier copy each step returned (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSize, table.size()); diff != "" {
				t.Errorf("size (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStringTableStaysBounded gives a table the strings of objects that keep coming and going: a few
// stay (and are given again and again), more are new every minute.
func TestStringTableStaysBounded(t *testing.T) {
	const live, churn, rounds = 10, 10, 100
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	table := newStringTable(4, time.Minute, func() time.Time { return now })
	first := map[string]*byte{}
	var moved []string
	for r := range rounds {
		now = now.Add(time.Minute)
		for i := range live {
			s := table.intern(fresh(fmt.Sprintf("live-%d", i)))
			if p, ok := first[s]; !ok {
				first[s] = unsafe.StringData(s)
			} else if p != unsafe.StringData(s) {
				moved = append(moved, fmt.Sprintf("round %d: %s", r, s))
			}
		}
		for i := range churn {
			table.intern(fresh(fmt.Sprintf("gone-%d-%d", r, i)))
		}
	}
	if diff := cmp.Diff([]string(nil), moved); diff != "" {
		t.Errorf("strings in use got a second copy (-want +got):\n%s", diff)
	}
	// Without generations the table would hold all live+churn*rounds (1010) strings.
	if got, bound := table.size(), 2*(live+2*churn); got > bound {
		t.Errorf("table holds %d strings, want at most %d", got, bound)
	}
}
