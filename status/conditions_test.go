package status

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/convergo-dev/convergo/internal/testapi"
)

var (
	t0 = metav1.NewTime(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	t1 = metav1.NewTime(time.Date(2030, 1, 2, 3, 5, 0, 0, time.UTC))
)

// pinClock makes transitionTime return t for the test's duration.
func pinClock(t *testing.T, at metav1.Time) {
	t.Helper()
	saved := now
	now = func() time.Time { return at.Time.Add(700 * time.Millisecond) } // sub-second part is dropped
	t.Cleanup(func() { now = saved })
}

func widget(gen int64, conds ...metav1.Condition) *testapi.Widget {
	w := &testapi.Widget{}
	w.Name, w.Namespace, w.Generation = "w", "ns", gen
	w.Status.Conditions = conds
	return w
}

func cond(t string, s metav1.ConditionStatus, reason, msg string, gen int64, ltt metav1.Time) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen, LastTransitionTime: ltt}
}

const (
	True    = metav1.ConditionTrue
	False   = metav1.ConditionFalse
	Unknown = metav1.ConditionUnknown
)

func TestSet(t *testing.T) {
	cases := map[string]struct {
		start       []metav1.Condition
		set         metav1.Condition
		want        []metav1.Condition
		wantChanged bool
	}{
		"new condition is appended with now and the generation": {
			start:       []metav1.Condition{cond("A", True, "R", "", 1, t0)},
			set:         metav1.Condition{Type: "B", Status: False, Reason: "Why", Message: "m"},
			want:        []metav1.Condition{cond("A", True, "R", "", 1, t0), cond("B", False, "Why", "m", 3, t1)},
			wantChanged: true,
		},
		"same status keeps lastTransitionTime, new reason and generation": {
			start:       []metav1.Condition{cond("A", True, "Old", "x", 1, t0), cond("B", True, "R", "", 1, t0)},
			set:         metav1.Condition{Type: "A", Status: True, Reason: "New", Message: "y"},
			want:        []metav1.Condition{cond("A", True, "New", "y", 3, t0), cond("B", True, "R", "", 1, t0)},
			wantChanged: true,
		},
		"status change moves lastTransitionTime, order kept": {
			start:       []metav1.Condition{cond("A", True, "R", "", 3, t0), cond("B", True, "R", "", 3, t0)},
			set:         metav1.Condition{Type: "A", Status: False, Reason: "R"},
			want:        []metav1.Condition{cond("A", False, "R", "", 3, t1), cond("B", True, "R", "", 3, t0)},
			wantChanged: true,
		},
		"identical condition is no change": {
			start:       []metav1.Condition{cond("A", True, "R", "m", 3, t0)},
			set:         metav1.Condition{Type: "A", Status: True, Reason: "R", Message: "m", LastTransitionTime: t1},
			want:        []metav1.Condition{cond("A", True, "R", "m", 3, t0)},
			wantChanged: false,
		},
		"given lastTransitionTime is used on a transition": {
			start:       []metav1.Condition{cond("A", True, "R", "", 3, t1)},
			set:         metav1.Condition{Type: "A", Status: False, Reason: "R", LastTransitionTime: t0},
			want:        []metav1.Condition{cond("A", False, "R", "", 3, t0)},
			wantChanged: true,
		},
		"empty type is ignored": {
			start: []metav1.Condition{cond("A", True, "R", "", 3, t0)},
			set:   metav1.Condition{Status: True, Reason: "R"},
			want:  []metav1.Condition{cond("A", True, "R", "", 3, t0)},
		},
		"Ready=True removes Reconciling and Stalled": {
			start:       []metav1.Condition{cond(Reconciling, True, "P", "", 3, t0), cond(Ready, False, "P", "", 3, t0), cond("X", True, "R", "", 3, t0)},
			set:         metav1.Condition{Type: Ready, Status: True, Reason: "Done"},
			want:        []metav1.Condition{cond(Ready, True, "Done", "", 3, t1), cond("X", True, "R", "", 3, t0)},
			wantChanged: true,
		},
		"Reconciling=True removes Stalled and demotes Ready": {
			start:       []metav1.Condition{cond(Ready, True, "Done", "", 3, t0), cond(Stalled, True, "Bad", "", 3, t0)},
			set:         metav1.Condition{Type: Reconciling, Status: True, Reason: "Progressing", Message: "m"},
			want:        []metav1.Condition{cond(Ready, False, "Progressing", "m", 3, t1), cond(Reconciling, True, "Progressing", "m", 3, t1)},
			wantChanged: true,
		},
		"Stalled=True removes Reconciling": {
			start:       []metav1.Condition{cond(Reconciling, True, "P", "", 3, t0), cond(Ready, False, "P", "", 3, t0)},
			set:         metav1.Condition{Type: Stalled, Status: True, Reason: "Invalid", Message: "bad"},
			want:        []metav1.Condition{cond(Ready, False, "P", "", 3, t0), cond(Stalled, True, "Invalid", "bad", 3, t1)},
			wantChanged: true,
		},
		"Reconciling=False removes it": {
			start:       []metav1.Condition{cond(Reconciling, True, "P", "", 3, t0), cond(Ready, False, "P", "", 3, t0)},
			set:         metav1.Condition{Type: Reconciling, Status: False, Reason: "Done"},
			want:        []metav1.Condition{cond(Ready, False, "P", "", 3, t0)},
			wantChanged: true,
		},
		"Stalled=Unknown when absent is no change": {
			start: []metav1.Condition{cond(Ready, False, "P", "", 3, t0)},
			set:   metav1.Condition{Type: Stalled, Status: Unknown, Reason: "Maybe"},
			want:  []metav1.Condition{cond(Ready, False, "P", "", 3, t0)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pinClock(t, t1)
			w := widget(3, tc.start...)
			w.Status.ObservedGeneration = 3
			changed := Set(w, tc.set)
			if diff := cmp.Diff(tc.want, w.Status.Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
		})
	}
}

func TestSetStampsTopLevelObservedGeneration(t *testing.T) {
	pinClock(t, t1)
	w := widget(7, cond("A", True, "R", "", 7, t0))
	w.Status.ObservedGeneration = 6
	if !Set(w, cond("A", True, "R", "", 0, metav1.Time{})) {
		t.Error("Set reported no change although status.observedGeneration moved")
	}
	if got := w.Status.ObservedGeneration; got != 7 {
		t.Errorf("status.observedGeneration = %d, want 7", got)
	}
	if Set(w, cond("A", True, "R", "", 0, metav1.Time{})) {
		t.Error("second identical Set reported a change")
	}
}

// observed has accessors for its observed generation, with its generation elsewhere than Status.
type observed struct {
	testapi.Widget
	seen int64
}

func (o *observed) GetObservedGeneration() int64  { return o.seen }
func (o *observed) SetObservedGeneration(g int64) { o.seen = g }

func TestSetUsesObservedGenerationInterface(t *testing.T) {
	o := &observed{}
	o.Generation = 4
	mark(o, "A", metav1.ConditionTrue, "R", "")
	if o.seen != 4 || o.Status.ObservedGeneration != 0 {
		t.Errorf("seen = %d, Status.ObservedGeneration = %d; want 4 and 0", o.seen, o.Status.ObservedGeneration)
	}
}

func TestMarkHelpers(t *testing.T) {
	cases := map[string]struct {
		start []metav1.Condition
		mark  func(w *testapi.Widget) bool
		want  []metav1.Condition
	}{
		"MarkReady from reconciling": {
			start: []metav1.Condition{cond(Ready, False, "P", "m", 2, t0), cond(Reconciling, True, "P", "m", 2, t0)},
			mark:  func(w *testapi.Widget) bool { return MarkReady(w, "Succeeded", "all good") },
			want:  []metav1.Condition{cond(Ready, True, "Succeeded", "all good", 2, t1)},
		},
		"MarkReconciling from ready": {
			start: []metav1.Condition{cond(Ready, True, "Succeeded", "", 2, t0)},
			mark:  func(w *testapi.Widget) bool { return MarkReconciling(w, "Progressing", "waiting for a") },
			want: []metav1.Condition{
				cond(Ready, False, "Progressing", "waiting for a", 2, t1),
				cond(Reconciling, True, "Progressing", "waiting for a", 2, t1),
			},
		},
		"MarkReconciling from Ready Unknown": {
			start: []metav1.Condition{cond(Ready, Unknown, "Init", "", 2, t0)},
			mark:  func(w *testapi.Widget) bool { return MarkReconciling(w, "Progressing", "") },
			want: []metav1.Condition{
				cond(Ready, False, "Progressing", "", 2, t1),
				cond(Reconciling, True, "Progressing", "", 2, t1),
			},
		},
		"MarkStalled from reconciling": {
			start: []metav1.Condition{cond(Ready, False, "P", "", 2, t0), cond(Reconciling, True, "P", "", 2, t0)},
			mark:  func(w *testapi.Widget) bool { return MarkStalled(w, "InvalidSpec", "size must be positive") },
			want: []metav1.Condition{
				cond(Ready, False, "InvalidSpec", "size must be positive", 2, t0),
				cond(Stalled, True, "InvalidSpec", "size must be positive", 2, t1),
			},
		},
		"MarkFalse formats the message": {
			mark: func(w *testapi.Widget) bool {
				return mark(w, "Synced", metav1.ConditionFalse, "Failed", "%d of %d", 1, 3)
			},
			want: []metav1.Condition{cond("Synced", False, "Failed", "1 of 3", 2, t1)},
		},
		"MarkUnknown": {
			mark: func(w *testapi.Widget) bool {
				return mark(w, "Synced", metav1.ConditionUnknown, "Pending", "%s unknown", "100%")
			},
			want: []metav1.Condition{cond("Synced", Unknown, "Pending", "100% unknown", 2, t1)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pinClock(t, t1)
			w := widget(2, tc.start...)
			if !tc.mark(w) {
				t.Error("mark reported no change")
			}
			if diff := cmp.Diff(tc.want, w.Status.Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if tc.mark(w) {
				t.Error("repeating the mark reported a change")
			}
		})
	}
}

func TestQueries(t *testing.T) {
	w := widget(5,
		cond(Ready, True, "R", "", 4, t0),
		cond("A", False, "R", "", 5, t0),
	)
	got := map[string]bool{
		"isTrue(Ready)":  isTrue(w, Ready),
		"isTrue(A)":      isTrue(w, "A"),
		"isTrue(absent)": isTrue(w, "C"),
		"IsReady(stale)": IsReady(w),
	}
	want := map[string]bool{"isTrue(Ready)": true, "isTrue(A)": false, "isTrue(absent)": false, "IsReady(stale)": false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	w.Status.Conditions[0].ObservedGeneration = 5
	if !IsReady(w) {
		t.Error("IsReady = false for Ready=True at the current generation")
	}
}

// TestQueriesDoNotAllocate: the queries read the object's conditions in place.
func TestQueriesDoNotAllocate(t *testing.T) {
	w := widget(5, cond("A", True, "R", "", 5, t0), cond("B", True, "R", "", 5, t0), cond(Ready, True, "R", "", 5, t0))
	cases := map[string]func(){
		"IsReady": func() { _ = IsReady(w) },
		"isTrue":  func() { _ = isTrue(w, "B") },
	}
	for name, query := range cases {
		t.Run(name, func(t *testing.T) {
			if got := testing.AllocsPerRun(100, query); got != 0 {
				t.Errorf("allocations per call = %v, want 0", got)
			}
		})
	}
}

// get returns a copy of obj's condition condType, or nil.
func get(obj Object, condType string) *metav1.Condition {
	if c := meta.FindStatusCondition(obj.GetConditions(), condType); c != nil {
		cp := *c
		return &cp
	}
	return nil
}

// mark sets condType to s with the given reason and formatted message, through Set.
func mark(obj Object, condType string, s metav1.ConditionStatus, reason, format string, args ...any) bool {
	return Set(obj, metav1.Condition{Type: condType, Status: s, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

func TestRemove(t *testing.T) {
	w := widget(1, cond("A", True, "R", "", 1, t0), cond("B", True, "R", "", 1, t0))
	if !Remove(w, "A") || Remove(w, "A") {
		t.Error("Remove should report true once, then false")
	}
	if diff := cmp.Diff([]metav1.Condition{cond("B", True, "R", "", 1, t0)}, w.Status.Conditions); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	Remove(w, "B")
	if w.Status.Conditions != nil {
		t.Errorf("conditions = %#v, want nil after removing the last", w.Status.Conditions)
	}
}

func TestLongMessageIsTruncated(t *testing.T) {
	w := widget(1)
	mark(w, "A", metav1.ConditionFalse, "R", "%s", strings.Repeat("é", maxMessageLength))
	msg := get(w, "A").Message
	if len(msg) > maxMessageLength || !strings.HasSuffix(msg, "...") {
		t.Errorf("message of %d bytes (suffix %q), want at most %d ending in ...", len(msg), msg[len(msg)-5:], maxMessageLength)
	}
	if !strings.HasPrefix(msg, "éé") || strings.ContainsRune(msg, '\uFFFD') {
		t.Error("truncation broke a rune")
	}
}

func TestReasonFor(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"plain":           {"Synced", "SyncedNotReported"},
		"domain prefixed": {"example.com/Synced-2", "examplecomSynced2NotReported"},
		"leading digits":  {"9lives", "livesNotReported"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := reasonFor(tc.in, "NotReported"); got != tc.want {
				t.Errorf("reasonFor(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
