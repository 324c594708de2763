package graph

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExternalFuncs: an External made of functions; Apply is told what Observe found (create, then
// change); a kept object with no ReleaseFn is let go as it is.
func TestExternalFuncs(t *testing.T) {
	f := newExternalFixture(t)
	funcs := ExternalFuncs[string]{KindName: "mem.thing", ObserveFn: f.s.Observe, ApplyFn: f.s.Apply, DeleteFn: f.s.Delete}
	build := func(value string) *Graph {
		g := New()
		AddExternal(g, "db", funcs, "app-db", value).KeepOnDelete()
		return g
	}
	for _, v := range []string{"v1", "v1", "v2"} {
		if _, err := build(v).Apply(t.Context(), f.a, f.owner); err != nil {
			t.Fatal(err)
		}
	}
	del, err := build("v2").Delete(t.Context(), f.a, f.owner)
	if err != nil || !del.Done {
		t.Fatalf("Delete = %+v, %v", del, err)
	}
	kept, _ := f.s.get("app-db")
	type outcome struct {
		Found   []string
		Kept    thing
		Deletes int
	}
	want := outcome{Found: []string{"app-db exists=false", "app-db exists=true"}, Kept: thing{Value: "v2", Owner: "uid-app"}}
	if diff := cmp.Diff(want, outcome{Found: f.s.found, Kept: kept, Deletes: f.s.count("delete")}); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestOwnerMark: the mark written into free text reads back; other text names no owner.
func TestOwnerMark(t *testing.T) {
	cases := map[string]struct {
		text string
		want string
	}{
		"written by OwnerMark": {text: OwnerMark("6f1c-uid"), want: "6f1c-uid"},
		"another tool's text":  {text: "created by hand"},
		"empty":                {text: ""},
		"the prefix inside":    {text: "see convergo.dev/owner=x"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, OwnerFromMark(tc.text)); diff != "" {
				t.Errorf("OwnerFromMark(%q) (-want +got):\n%s", tc.text, diff)
			}
		})
	}
	if got := OwnerMark("u"); got != "convergo.dev/owner=u" {
		t.Errorf("OwnerMark(u) = %q", got)
	}
}
