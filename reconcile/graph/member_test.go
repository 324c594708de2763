package graph

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/internal/applytest"
	"github.com/convergo-dev/convergo/reconcile/internal/seam"
)

// TestMemberNotKnown: a child placed in a member cluster the Applier does not know (never added, or
// removed from the set) cannot be applied, and the error names the node and the member; on deletion a
// kept child there counts as released (it stays, as a kept child does), while any other child holds
// the deletion with the same error.
func TestMemberNotKnown(t *testing.T) {
	c := applytest.NewFake(t, nil)
	a := apply.NewApplier(c, c)
	seam.Of(a).SetMembers(func(string) (cluster.Cluster, bool) { return nil, false }, func() []string { return nil })
	owner := applytest.Owner("app")
	tests := map[string]struct {
		keep     bool
		wantDone bool
	}{
		"kept: released": {keep: true, wantDone: true},
		"deleted: waits": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := New()
			n := g.Add("placed", cm("x")).InCluster("gone")
			if tc.keep {
				n.KeepOnDelete()
			}
			_, err := g.Apply(t.Context(), a, owner)
			var unknown *seam.UnknownClusterError
			var ne *NodeError
			if !errors.As(err, &unknown) || !errors.As(err, &ne) || ne.Node != "placed" || unknown.Name != "gone" {
				t.Errorf("Apply = %v; want the node's error naming member cluster gone", err)
			}
			res, err := g.Delete(t.Context(), a, owner)
			if tc.wantDone != (err == nil) {
				t.Errorf("Delete error = %v, want an error %v", err, !tc.wantDone)
			}
			if diff := cmp.Diff(tc.wantDone, res.Done); diff != "" {
				t.Errorf("Delete done (-want +got):\n%s", diff)
			}
		})
	}
}
