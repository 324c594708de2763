package member

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// fakeManager records the runnables added to it; any other method panics.
type fakeManager struct {
	manager.Manager
	runnables []manager.Runnable
}

func (m *fakeManager) Add(r manager.Runnable) error {
	m.runnables = append(m.runnables, r)
	return nil
}

// fakeCluster runs until its context ends, and records that it did.
type fakeCluster struct {
	cluster.Cluster
	stopped chan struct{}
}

func newFakeCluster() *fakeCluster { return &fakeCluster{stopped: make(chan struct{})} }

func (c *fakeCluster) Start(ctx context.Context) error {
	<-ctx.Done()
	close(c.stopped)
	return nil
}

func TestSet(t *testing.T) {
	mgr := &fakeManager{}
	s := NewSet(mgr)
	var seen []string
	s.Watch(func(name string, _ cluster.Cluster) { seen = append(seen, "watch "+name) })
	a, b, b2 := newFakeCluster(), newFakeCluster(), newFakeCluster()
	for _, add := range []struct {
		name string
		c    cluster.Cluster
	}{{"b", b}, {"a", a}} {
		if err := s.Add(add.name, add.c); err != nil {
			t.Fatal(err)
		}
	}
	s.Watch(func(name string, _ cluster.Cluster) { seen = append(seen, "late "+name) })
	if diff := cmp.Diff([]string{"a", "b"}, s.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	if got, ok := s.Get("a"); !ok || got != a {
		t.Errorf("Get(a) = %v, %v; want the cluster added", got, ok)
	}
	ctx := t.Context()
	for _, r := range mgr.runnables {
		go func() { _ = r.Start(ctx) }()
	}
	if err := s.Add("b", b2); err != nil { // replaced: the old cluster stops
		t.Fatal(err)
	}
	<-b.stopped
	s.Remove("a")
	<-a.stopped
	if diff := cmp.Diff([]string{"b"}, s.Names()); diff != "" {
		t.Errorf("Names after Remove (-want +got):\n%s", diff)
	}
	if _, ok := s.Get("a"); ok {
		t.Error("Get(a) after Remove found it")
	}
	slicesSortTail(seen, 2) // the late watcher sees the members of the time in map order
	want := []string{"watch b", "watch a", "late a", "late b", "watch b", "late b"}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("watchers told (-want +got):\n%s", diff)
	}
}

// slicesSortTail sorts s[from:from+2], the two calls made for the members present when a watcher came.
func slicesSortTail(s []string, from int) {
	if s[from] > s[from+1] {
		s[from], s[from+1] = s[from+1], s[from]
	}
}

func TestSetAddRefuses(t *testing.T) {
	s := NewSet(&fakeManager{})
	tests := map[string]struct {
		name string
		c    cluster.Cluster
	}{
		"no name":    {c: newFakeCluster()},
		"no cluster": {name: "a"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if err := s.Add(tc.name, tc.c); err == nil {
				t.Error("Add succeeded")
			}
		})
	}
}
