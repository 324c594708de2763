package apply

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/convergo-dev/convergo/internal/testapi"
)

func widgetAt(uid types.UID, rv string, finalizers ...string) *testapi.Widget {
	return &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", UID: uid, ResourceVersion: rv, Finalizers: finalizers}}
}

// widgetID is the identity of every widgetAt (all named "w").
var widgetID = objectID{gk: schema.GroupKind{Group: "test.convergo.dev", Kind: "Widget"}, key: types.NamespacedName{Name: "w"}}

// TestKnowledgeOwnWrites: what a reconcile works on when the cache may not show the Reconciler's own
// writes to the object yet.
func TestKnowledgeOwnWrites(t *testing.T) {
	type step struct {
		// wrote: a write turned version before into after; else the cache (or an event) shows cached.
		before  string
		after   *testapi.Widget
		cached  *testapi.Widget
		observe bool
	}
	type result struct {
		RV         string // resolve's choice (after the last step)
		Finalizers []string
		Records    int
	}
	cases := map[string]struct {
		steps []step
		read  *testapi.Widget
		want  result
	}{
		"no write: the cache": {
			read: widgetAt("a", "1"),
			want: result{RV: "1"},
		},
		"the cache shows the version our write replaced: our write": {
			steps: []step{{before: "1", after: widgetAt("a", "2", "f")}},
			read:  widgetAt("a", "1"),
			want:  result{RV: "2", Finalizers: []string{"f"}, Records: 1},
		},
		"two writes in a row, the cache between them: the last write": {
			steps: []step{{before: "1", after: widgetAt("a", "2", "f")}, {before: "2", after: widgetAt("a", "3", "f")}},
			read:  widgetAt("a", "2", "f"),
			want:  result{RV: "3", Finalizers: []string{"f"}, Records: 1},
		},
		"the cache caught up: the cache, record dropped": {
			steps: []step{{before: "1", after: widgetAt("a", "2", "f")}},
			read:  widgetAt("a", "2", "f"),
			want:  result{RV: "2", Finalizers: []string{"f"}},
		},
		"someone else wrote after us: the cache, record dropped": {
			steps: []step{{before: "1", after: widgetAt("a", "2", "f")}},
			read:  widgetAt("a", "7", "f", "other"),
			want:  result{RV: "7", Finalizers: []string{"f", "other"}},
		},
		"the informer delivered our write: record dropped before any read": {
			steps: []step{{before: "1", after: widgetAt("a", "2", "f")}, {observe: true, cached: widgetAt("a", "2", "f")}},
			read:  widgetAt("a", "1"),
			want:  result{RV: "1"},
		},
		"the informer delivered a superseded version: record kept": {
			steps: []step{
				{before: "1", after: widgetAt("a", "2", "f")}, {before: "2", after: widgetAt("a", "3", "f")},
				{observe: true, cached: widgetAt("a", "2", "f")},
			},
			read: widgetAt("a", "2", "f"),
			want: result{RV: "3", Finalizers: []string{"f"}, Records: 1},
		},
		"another object under the same name: the cache, record dropped": {
			steps: []step{{before: "1", after: widgetAt("a", "2", "f")}},
			read:  widgetAt("b", "1"),
			want:  result{RV: "1"},
		},
		"a write that changed nothing is not recorded": {
			steps: []step{{before: "2", after: widgetAt("a", "2")}},
			read:  widgetAt("a", "2"),
			want:  result{RV: "2"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newKnowledge()
			for _, s := range tc.steps {
				if s.observe {
					w.observe(widgetID, s.cached)
					continue
				}
				w.wrote(widgetID, "", nil, s.before, s.after, "", true)
			}
			got := w.resolve(widgetID, tc.read).(*testapi.Widget)
			res := result{RV: got.ResourceVersion, Finalizers: got.Finalizers, Records: w.len()}
			if diff := cmp.Diff(tc.want, res); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestKnowledgeReturnsCopies: a reconcile changes the object it works on; that must not change the record.
func TestKnowledgeReturnsCopies(t *testing.T) {
	w := newKnowledge()
	after := widgetAt("a", "2", "f")
	w.wrote(widgetID, "", nil, "1", after, "", true)
	after.Finalizers = append(after.Finalizers, "changed after the write")
	first := w.resolve(widgetID, widgetAt("a", "1")).(*testapi.Widget)
	first.Finalizers = nil
	second := w.resolve(widgetID, widgetAt("a", "1")).(*testapi.Widget)
	if diff := cmp.Diff([]string{"f"}, second.Finalizers); diff != "" {
		t.Errorf("finalizers of the recorded write (-want +got):\n%s", diff)
	}
}

// TestKnowledgeChildren: what the record says about a child the cache shows, or does not show.
func TestKnowledgeChildren(t *testing.T) {
	cm := func(uid types.UID, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "w", UID: uid, ResourceVersion: rv}}
	}
	type answers struct {
		// Lagging: the cache's copy (uid a, version 1) is a version our write of hash h replaced.
		Lagging bool
		// UnseenWrite: a cache miss says nothing (we wrote it, the cache has not shown it).
		UnseenWrite bool
		// DeleteSent: our DELETE of uid a was accepted (not to be sent again).
		DeleteSent bool
		// GoneByCache: a cache miss now means gone.
		GoneByCache bool
		// Unsettled: children of owner o the record knows of and the cache may not show.
		Unsettled int
	}
	cases := map[string]struct {
		do   func(k *knowledge)
		want answers
	}{
		"nothing known": {do: func(*knowledge) {}},
		"updated: the cache shows the version before": {
			do:   func(k *knowledge) { k.wrote(widgetID, "o", cm("", ""), "1", cm("a", "2"), "h", false) },
			want: answers{Lagging: true, UnseenWrite: true, Unsettled: 1},
		},
		"created: a cache miss is checked": {
			do:   func(k *knowledge) { k.wrote(widgetID, "o", cm("", ""), "", cm("a", "2"), "h", false) },
			want: answers{UnseenWrite: true, Unsettled: 1},
		},
		"deleted what the cache showed: a miss is the informer's delete event": {
			do:   func(k *knowledge) { k.sentDelete(widgetID, "o", cm("", ""), "a", true) },
			want: answers{DeleteSent: true, GoneByCache: true, Unsettled: 1},
		},
		"deleted what the API server showed: a miss is checked": {
			do:   func(k *knowledge) { k.sentDelete(widgetID, "o", cm("", ""), "a", false) },
			want: answers{DeleteSent: true, Unsettled: 1},
		},
		"the API server said gone": {
			do: func(k *knowledge) {
				k.sentDelete(widgetID, "o", cm("", ""), "a", false)
				k.confirmGone(widgetID, "o", "a")
			},
			want: answers{DeleteSent: true, GoneByCache: true},
		},
		"owner finalized: its children forgotten": {
			do: func(k *knowledge) {
				k.sentDelete(widgetID, "o", cm("", ""), "a", false)
				k.forgetChildren("o")
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			k := newKnowledge()
			tc.do(k)
			// In this order: lagging drops the record of a write the cache has caught up with.
			got := answers{
				UnseenWrite: k.unseenWrite(widgetID),
				DeleteSent:  k.deleteSent(widgetID, "a"),
				Unsettled:   len(k.unsettled("o")),
			}
			got.Lagging = k.lagging(widgetID, cm("a", "1"), "h")
			got.GoneByCache = k.goneByCache(widgetID)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestKnowledgeBounded: past maxKnown records the older half is dropped.
func TestKnowledgeBounded(t *testing.T) {
	k := newKnowledge()
	clock := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	k.now = func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	for i := range maxKnown + 1 {
		id := objectID{gk: widgetID.gk, key: types.NamespacedName{Name: fmt.Sprint(i)}}
		k.sentDelete(id, "o", nil, types.UID(fmt.Sprint(i)), true)
	}
	if n := k.len(); n > maxKnown/2+1 || n == 0 {
		t.Errorf("%d records after %d deletions, want about %d", n, maxKnown+1, maxKnown/2)
	}
	newest := objectID{gk: widgetID.gk, key: types.NamespacedName{Name: fmt.Sprint(maxKnown)}}
	if !k.deleteSent(newest, types.UID(fmt.Sprint(maxKnown))) {
		t.Error("the newest record was dropped")
	}
}

// TestKnowledgeCompacts: once most records are dropped, the map is rebuilt, and the records left are
// kept.
func TestKnowledgeCompacts(t *testing.T) {
	k := newKnowledge()
	gk := schema.GroupKind{Kind: "ConfigMap"}
	const n = 200
	for i := range n {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint(i), UID: types.UID(fmt.Sprint(i)), ResourceVersion: "2"}}
		k.wrote(idOf(gk, obj), "", nil, "1", obj, "h", false)
	}
	before := k.m
	for i := range n - 10 {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint(i), UID: types.UID(fmt.Sprint(i)), ResourceVersion: "2"}}
		k.observe(idOf(gk, obj), obj)
	}
	rebuilt := reflect.ValueOf(k.m).UnsafePointer() != reflect.ValueOf(before).UnsafePointer()
	if diff := cmp.Diff([2]any{true, 10}, [2]any{rebuilt, k.len()}); diff != "" {
		t.Errorf("(rebuilt, records) (-want +got):\n%s", diff)
	}
	last := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint(n - 1), UID: types.UID(fmt.Sprint(n - 1))}}
	if !k.unseenWrite(idOf(gk, last)) {
		t.Error("the record of a write the cache has not shown was lost")
	}
}
