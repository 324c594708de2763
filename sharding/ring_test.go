package sharding

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// uids returns n UIDs shaped like the API server's (random UUIDs), the same on every run.
func uids(n int) []types.UID {
	rnd := rand.New(rand.NewPCG(1, 2))
	out := make([]types.UID, n)
	for i := range out {
		a, b := rnd.Uint64(), rnd.Uint64()
		out[i] = types.UID(fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", a>>32, a>>16&0xffff, a&0xfff, b>>48&0x3fff|0x8000, b&0xffffffffffff))
	}
	return out
}

// TestRingJoinMovesOnlyToTheNewMember: when a member joins, exactly the objects the new ring gives it
// move, about 1/N of them, and nothing moves between the members that stay; a leave moves exactly the
// leaving member's objects.
func TestRingJoinMovesOnlyToTheNewMember(t *testing.T) {
	objs := uids(3000)
	tests := map[string]struct {
		before, after []string
		// wantShare bounds the share of objects that move: [low, high].
		low, high float64
	}{
		"3 -> 4": {before: []string{"a", "b", "c"}, after: []string{"a", "b", "c", "d"}, low: 0.15, high: 0.35},
		"1 -> 2": {before: []string{"a"}, after: []string{"a", "b"}, low: 0.35, high: 0.65},
		"4 -> 3": {before: []string{"a", "b", "c", "d"}, after: []string{"a", "b", "d"}, low: 0.15, high: 0.35},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before, after := NewRing(tc.before), NewRing(tc.after)
			moved := 0
			for _, uid := range objs {
				from, to := before.Owner(uid), after.Owner(uid)
				if from == to {
					continue
				}
				moved++
				joined := !contains(tc.before, to)
				left := !contains(tc.after, from)
				if !joined && !left {
					t.Errorf("object %s moved from %s to %s, both members before and after", uid, from, to)
				}
			}
			share := float64(moved) / float64(len(objs))
			if share < tc.low || share > tc.high {
				t.Errorf("%.3f of the objects moved, want between %.2f and %.2f", share, tc.low, tc.high)
			}
		})
	}
}

// TestRingBalance: with the default virtual nodes every member of 3 owns close to a third.
func TestRingBalance(t *testing.T) {
	r := NewRing([]string{"welcome-0", "welcome-1", "welcome-2"})
	counts := map[string]int{}
	objs := uids(6000)
	for _, uid := range objs {
		counts[r.Owner(uid)]++
	}
	for _, m := range r.Members() {
		share := float64(counts[m]) / float64(len(objs))
		if share < 0.25 || share > 0.42 {
			t.Errorf("%s owns %.3f of the objects, want about 1/3", m, share)
		}
	}
}

// TestRingIsDeterministic: the order of the members, duplicates and empty names do not change the
// assignment; an empty ring owns nothing.
func TestRingIsDeterministic(t *testing.T) {
	a := NewRing([]string{"x", "y", "z"})
	b := NewRing([]string{"z", "", "x", "y", "x"})
	if diff := cmp.Diff(a.Members(), b.Members()); diff != "" {
		t.Errorf("members (-a +b):\n%s", diff)
	}
	for _, uid := range uids(500) {
		if a.Owner(uid) != b.Owner(uid) {
			t.Fatalf("object %s: %s in one ring, %s in the other", uid, a.Owner(uid), b.Owner(uid))
		}
	}
	if got := NewRing(nil).Owner("u"); got != "" {
		t.Errorf("empty ring: Owner = %q, want none", got)
	}
	if got := NewRing([]string{"only"}, WithVirtualNodes(1)).Owner("u"); got != "only" {
		t.Errorf("one member: Owner = %q, want only", got)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
