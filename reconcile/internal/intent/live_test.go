package intent

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/convergo-dev/convergo/internal/kobj"
)

// FuzzLiveContent checks that the drift check judges a typed live object the same from the fields
// the intent sets (liveContent) as from the whole object converted to unstructured content: same
// verdict (the first difference named depends on the order maps are walked in). Live objects are filled randomly; the desired object is the live
// one with fields dropped at random (an intent the live object holds) and, in half of the cases, one
// scalar changed (an intent it may not hold).
func FuzzLiveContent(f *testing.F) {
	for seed := range int64(16) {
		f.Add(seed, uint8(seed))
	}
	s := testScheme(f)
	f.Fuzz(func(t *testing.T, seed int64, kind uint8) {
		live := randomObject(seed, kind)
		live.SetName("n")
		full, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
		if err != nil {
			t.Skip() // randomly filled values the converter cannot handle
		}
		// Held as the API server holds it (quantities parsed and serialised again).
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(full, live); err != nil {
			t.Skip()
		}
		if full, err = runtime.DefaultUnstructuredConverter.ToUnstructured(live); err != nil {
			t.Skip()
		}

		rnd := rand.New(rand.NewPCG(uint64(seed), uint64(kind)))
		want := runtime.DeepCopyJSON(full)
		prune(want, rnd)
		if rnd.IntN(2) == 0 {
			change(want, rnd)
		}
		desired := kobj.New(live)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(want, desired); err != nil {
			t.Skip()
		}
		in, err := Of(desired, s)
		if err != nil {
			t.Fatal(err)
		}
		gvk, err := apiutil.GVKForObject(live, s)
		if err != nil {
			t.Fatal(err)
		}
		ks := schemaFor(gvk)

		full["apiVersion"], full["kind"] = in["apiVersion"], in["kind"]
		wantSame, wantPath := isSubsetWith(in, full, false, ks)
		part, err := liveContent(live, in)
		if err != nil {
			t.Fatal(err)
		}
		part["apiVersion"], part["kind"] = in["apiVersion"], in["kind"]
		gotSame, gotPath := isSubsetWith(in, part, false, ks)
		if gotSame != wantSame {
			t.Fatalf("judged from the intent's fields: %v at %q; from the whole object: %v at %q\nintent:\n%s", gotSame, gotPath, wantSame, wantPath, cmp.Diff(nil, in))
		}
	})
}

// prune drops map entries of v at random, recursively.
func prune(v any, rnd *rand.Rand) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if k != "apiVersion" && k != "kind" && rnd.IntN(4) == 0 {
				delete(v, k)
				continue
			}
			prune(e, rnd)
		}
	case []any:
		for _, e := range v {
			prune(e, rnd)
		}
	}
}

// change changes one scalar of v (a string, number or bool), found by a random walk.
func change(v any, rnd *rand.Rand) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			switch e := e.(type) {
			case string:
				if k != "apiVersion" && k != "kind" {
					v[k] = e + "x"
					return true
				}
			case int64:
				v[k] = e + 1
				return true
			case bool:
				v[k] = !e
				return true
			default:
				if rnd.IntN(2) == 0 && change(e, rnd) {
					return true
				}
			}
		}
	case []any:
		for _, e := range v {
			if change(e, rnd) {
				return true
			}
		}
	}
	return false
}
