package apply

import (
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile/internal/applytest"
	"github.com/convergo-dev/convergo/reconcile/internal/seam"
)

// fakeCluster is a member cluster whose client is a fake one (no cache to wait for).
type fakeCluster struct {
	cluster.Cluster
	c client.Client
}

func (f *fakeCluster) GetClient() client.Client    { return f.c }
func (f *fakeCluster) GetAPIReader() client.Reader { return f.c }
func (f *fakeCluster) GetScheme() *runtime.Scheme  { return f.c.Scheme() }
func (f *fakeCluster) GetCache() cache.Cache       { return nil }
func (f *fakeCluster) GetConfig() *rest.Config     { return nil }
func (f *fakeCluster) GetHTTPClient() *http.Client { return nil }

// TestIn: the Applier of a member cluster applies there, with the owner's tracking marks and no owner
// reference; it is made once per cluster; a member the set does not hold is an error naming it.
func TestIn(t *testing.T) {
	hub := applytest.NewFake(t, nil)
	members := map[string]cluster.Cluster{"a": &fakeCluster{c: applytest.NewFake(t, nil)}}
	a := NewApplier(hub, hub, WithFieldManager("placer"))
	seam.Of(a).SetMembers(func(name string) (cluster.Cluster, bool) { c, ok := members[name]; return c, ok },
		func() []string { return []string{"a"} })

	if own, err := a.In(""); err != nil || own != a {
		t.Errorf(`In("") = %p, %v; want the Applier itself`, own, err)
	}
	var unknown *seam.UnknownClusterError
	if _, err := a.In("z"); !errors.As(err, &unknown) || unknown.Name != "z" {
		t.Errorf(`In("z") = %v; want an UnknownClusterError naming z`, err)
	}
	ma, err := a.In("a")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := a.In("a"); again != ma {
		t.Error(`In("a") made a second Applier for the same cluster`)
	}
	if diff := cmp.Diff([]string{"a", "placer"}, []string{ma.Cluster(), ma.FieldManager()}); diff != "" {
		t.Errorf("member Applier's cluster and field manager (-want +got):\n%s", diff)
	}
	owner := applytest.Owner("app")
	live, op, err := ma.Apply(t.Context(), owner, applytest.DesiredCM(map[string]string{"k": "v"}))
	if err != nil || op != OperationCreated {
		t.Fatalf("Apply in member a = %s, %v; want Created", op, err)
	}
	got := live.(*corev1.ConfigMap)
	if !ownership.IsTrackedBy(got, owner) || len(got.OwnerReferences) != 0 {
		t.Errorf("member child: labels %v, owner references %v; want tracked, no owner reference", got.Labels, got.OwnerReferences)
	}
	if err := hub.Get(t.Context(), client.ObjectKeyFromObject(got), &corev1.ConfigMap{}); err == nil {
		t.Error("the member's child was written to the hub too")
	}

	members["a"] = &fakeCluster{c: applytest.NewFake(t, nil)} // replaced in the set
	if again, _ := a.In("a"); again == ma {
		t.Error(`In("a") kept the Applier of a cluster the set no longer holds`)
	}
	delete(members, "a")
	if _, err := a.In("a"); !errors.As(err, &unknown) {
		t.Errorf(`In("a") after removal = %v; want an UnknownClusterError`, err)
	}
}
