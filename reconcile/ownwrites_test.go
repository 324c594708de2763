package reconcile

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/convergo-dev/convergo/internal/testapi"
)

func widgetAt(uid types.UID, rv string, finalizers ...string) *testapi.Widget {
	return &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", UID: uid, ResourceVersion: rv, Finalizers: finalizers}}
}

func TestOwnWrites(t *testing.T) {
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
		"another object: the cache": {
			steps: []step{{before: "1", after: widgetAt("a", "2", "f")}},
			read:  widgetAt("b", "1"),
			want:  result{RV: "1", Records: 1},
		},
		"a write that changed nothing is not recorded": {
			steps: []step{{before: "2", after: widgetAt("a", "2")}},
			read:  widgetAt("a", "2"),
			want:  result{RV: "2"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newOwnWrites[*testapi.Widget]()
			for _, s := range tc.steps {
				if s.observe {
					w.observe(s.cached)
					continue
				}
				w.wrote(s.before, s.after)
			}
			got := w.resolve(tc.read)
			res := result{RV: got.ResourceVersion, Finalizers: got.Finalizers, Records: w.len()}
			if diff := cmp.Diff(tc.want, res); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestOwnWritesReturnsCopies: a reconcile changes the object it works on; that must not change the record.
func TestOwnWritesReturnsCopies(t *testing.T) {
	w := newOwnWrites[*testapi.Widget]()
	after := widgetAt("a", "2", "f")
	w.wrote("1", after)
	after.Finalizers = append(after.Finalizers, "changed after the write")
	first := w.resolve(widgetAt("a", "1"))
	first.Finalizers = nil
	second := w.resolve(widgetAt("a", "1"))
	if diff := cmp.Diff([]string{"f"}, second.Finalizers); diff != "" {
		t.Errorf("finalizers of the recorded write (-want +got):\n%s", diff)
	}
}
