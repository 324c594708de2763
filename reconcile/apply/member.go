package apply

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/convergo-dev/convergo/reconcile/internal/seam"
)

// members are the member clusters an Applier places children in, each with an Applier of its own.
type members struct {
	mu sync.Mutex
	// lookup finds a member cluster by name (set through reconcile/internal/seam by the Reconciler
	// that was given a member.Set); nil without members.
	lookup func(name string) (cluster.Cluster, bool)
	names  func() []string
	// appliers holds the Applier of each member cluster, for the cluster it was made for: a member
	// removed and added again gets a new one.
	appliers map[string]memberApplier
}

type memberApplier struct {
	c cluster.Cluster
	a *Applier
}

// In returns the Applier of the member cluster name, which applies, deletes and prunes children
// there as this Applier does here, with the same options; "" is this Applier's own cluster. A child
// in a member cluster cannot have an owner reference to an owner in another cluster: it is always
// tracked (ownership.Track), and never taken from another owner. The error names the member when it
// is not one this Applier knows (a member.Set the Reconciler was given holds the names).
func (a *Applier) In(name string) (*Applier, error) {
	if name == "" || a.cluster != "" {
		return a, nil
	}
	m := &a.members
	m.mu.Lock()
	defer m.mu.Unlock()
	var c cluster.Cluster
	ok := false
	if m.lookup != nil {
		c, ok = m.lookup(name)
	}
	if !ok {
		delete(m.appliers, name)
		return nil, &seam.UnknownClusterError{Name: name}
	}
	if ma, ok := m.appliers[name]; ok && sameCluster(ma.c, c) {
		return ma.a, nil
	}
	cfg := a.cfg
	cfg.deleter = nil
	WithConnection(c.GetConfig(), c.GetHTTPClient())(&cfg)
	ma := &Applier{client: c.GetClient(), scheme: c.GetScheme(), cfg: cfg, reader: c.GetAPIReader(), known: newKnowledge(),
		cluster: name, memberCache: c.GetCache()}
	setSeam(ma)
	if m.appliers == nil {
		m.appliers = map[string]memberApplier{}
	}
	m.appliers[name] = memberApplier{c: c, a: ma}
	return ma, nil
}

// Cluster names the member cluster the Applier places children in: "" for its own.
func (a *Applier) Cluster() string { return a.cluster }

// setMembers makes lookup the way a finds member clusters, and names the way it lists them.
func (a *Applier) setMembers(lookup func(name string) (cluster.Cluster, bool), names func() []string) {
	a.members.mu.Lock()
	defer a.members.mu.Unlock()
	a.members.lookup, a.members.names = lookup, names
}

// memberNames returns the names of the member clusters a knows now.
func (a *Applier) memberNames() []string {
	a.members.mu.Lock()
	defer a.members.mu.Unlock()
	if a.members.names == nil {
		return nil
	}
	return a.members.names()
}

// reachable reports, for the Applier of a member cluster, whether its cache holds a synced view of the
// kinds of objs: reading an informer that never synced (a member unreachable since it was added) would
// wait for it, and hold the reconcile and its worker. The error names the member. It asks nothing of
// the member's API server.
func (a *Applier) reachable(ctx context.Context, objs ...client.Object) error {
	if a.memberCache == nil {
		return nil
	}
	for _, obj := range objs {
		inf, err := a.memberCache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("member cluster %q: %w", a.cluster, err)
		}
		if !inf.HasSynced() {
			gvk, _ := apiutil.GVKForObject(obj, a.scheme)
			return fmt.Errorf("member cluster %q is not reachable: its cache of %s has not synced yet", a.cluster, gvk.Kind)
		}
	}
	return nil
}

// sameCluster reports whether x and y are the same cluster (a cluster.Cluster from cluster.New is a
// pointer; one that cannot be compared counts as another).
func sameCluster(x, y cluster.Cluster) bool {
	vx, vy := reflect.ValueOf(x), reflect.ValueOf(y)
	return vx.Type() == vy.Type() && vx.Comparable() && vx.Equal(vy)
}
