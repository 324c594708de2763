package member

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Set is a changing set of named member clusters. Each runs (its cache) while it is in the set and
// the manager runs. Safe for concurrent use.
type Set struct {
	mgr manager.Manager

	mu       sync.Mutex
	clusters map[string]*running
	// watchers are told of each cluster added (Watch).
	watchers []func(name string, c cluster.Cluster)
}

// running is one member cluster of a Set, and how to stop it.
type running struct {
	c    cluster.Cluster
	stop context.CancelFunc
}

// NewSet returns an empty Set whose clusters run with mgr: each starts when the manager starts (at
// once when it runs already) and stops with it or when removed.
func NewSet(mgr manager.Manager) *Set {
	return &Set{mgr: mgr, clusters: map[string]*running{}}
}

// Add makes c the member cluster name; a cluster the set held under that name is stopped. c's cache
// starts with the manager, and every Reconciler given the set watches its children there. Give c a
// cache that holds only the operator's children (childcache.Configure) and a rest.Config with a
// Timeout, so that an unreachable member fails its requests instead of holding a worker.
func (s *Set) Add(name string, c cluster.Cluster) error {
	if name == "" {
		return errors.New("add member cluster: the name is empty; name each member (the name its children are placed in with Node.InCluster)")
	}
	if c == nil {
		return fmt.Errorf("add member cluster %q: the cluster is nil: create it with cluster.New", name)
	}
	ctx, stop := context.WithCancel(context.Background())
	r := &running{c: c, stop: stop}
	err := s.mgr.Add(manager.RunnableFunc(func(mgrCtx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stopped := context.AfterFunc(mgrCtx, cancel)
		defer stopped()
		// ctx ends with the manager, with Remove and with a replacing Add: none of them is an error.
		if err := c.Start(ctx); err != nil && ctx.Err() == nil {
			return fmt.Errorf("member cluster %q: %w", name, err)
		}
		return nil
	}))
	if err != nil {
		stop()
		return fmt.Errorf("add member cluster %q: %w", name, err)
	}
	s.mu.Lock()
	old := s.clusters[name]
	s.clusters[name] = r
	watchers := slices.Clone(s.watchers)
	s.mu.Unlock()
	if old != nil {
		old.stop()
	}
	for _, w := range watchers {
		w(name, c)
	}
	return nil
}

// Remove stops the member cluster name and forgets it. Children placed there stay; a Reconciler
// reports a node placed in a member it no longer knows, and an owner being deleted waits for it
// (a kept child counts as released: see graph.Node.InCluster).
func (s *Set) Remove(name string) {
	s.mu.Lock()
	r := s.clusters[name]
	delete(s.clusters, name)
	s.mu.Unlock()
	if r != nil {
		r.stop()
	}
}

// Get returns the member cluster name.
func (s *Set) Get(name string) (cluster.Cluster, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.clusters[name]
	if !ok {
		return nil, false
	}
	return r.c, true
}

// Names returns the names of the member clusters, sorted.
func (s *Set) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.clusters))
	for n := range s.clusters {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Watch calls f for each member cluster in the set now and for each added later (a replaced one
// again, with its new cluster), in the caller's goroutine for the first and in Add's for the others.
// A Reconciler uses it to watch its children in each member.
func (s *Set) Watch(f func(name string, c cluster.Cluster)) {
	s.mu.Lock()
	s.watchers = append(s.watchers, f)
	now := make(map[string]cluster.Cluster, len(s.clusters))
	for n, r := range s.clusters {
		now[n] = r.c
	}
	s.mu.Unlock()
	for n, c := range now {
		f(n, c)
	}
}
