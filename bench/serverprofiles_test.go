package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"

	"github.com/convergo-dev/convergo/testing/cluster"
)

// fakeProfiler answers each profile of a component once the test releases it, with data naming the
// component and the call's number; a component in failAt fails its call of that number.
type fakeProfiler struct {
	mu      sync.Mutex
	calls   map[cluster.Component]int
	started map[cluster.Component]chan struct{}
	release map[cluster.Component]chan struct{}
	failAt  map[cluster.Component]int
}

func newFakeProfiler(comps []cluster.Component, failAt map[cluster.Component]int) *fakeProfiler {
	f := &fakeProfiler{calls: map[cluster.Component]int{}, started: map[cluster.Component]chan struct{}{},
		release: map[cluster.Component]chan struct{}{}, failAt: failAt}
	for _, c := range comps {
		f.started[c] = make(chan struct{}, 100)
		f.release[c] = make(chan struct{})
	}
	return f
}

func (f *fakeProfiler) profile(ctx context.Context, comp cluster.Component, d time.Duration) ([]byte, error) {
	f.mu.Lock()
	f.calls[comp]++
	n := f.calls[comp]
	f.mu.Unlock()
	f.started[comp] <- struct{}{}
	select {
	case <-f.release[comp]:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if f.failAt[comp] == n {
		return nil, errors.New("profiler refused")
	}
	return []byte(string(comp) + " " + d.String()), nil
}

// TestServerProfiles records two profiles of each component, ends the recording while the third is
// under way, and checks that the third is still written, that no fourth starts, and that a component
// whose profile fails stops there without stopping the others.
func TestServerProfiles(t *testing.T) {
	comps := []cluster.Component{cluster.APIServer, cluster.ControllerManager, cluster.Scheduler}
	fake := newFakeProfiler(comps, map[cluster.Component]int{cluster.Scheduler: 2})
	dir := t.TempDir()
	p := startServerProfiles(t.Context(), fake.profile, comps, 7*time.Second, dir, "convergo-r1-update", logr.Discard())

	for round := 1; round <= 3; round++ {
		for _, c := range comps {
			if c == cluster.Scheduler && round == 3 {
				continue // failed at 2: no third call
			}
			<-fake.started[c]
			if round == 3 {
				continue // under way when the recording ends
			}
			fake.release[c] <- struct{}{}
		}
	}
	p.end()
	waited := make(chan struct{})
	go func() {
		p.wait()
		close(waited)
	}()
	for _, c := range comps[:2] {
		fake.release[c] <- struct{}{}
	}
	<-waited

	got := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got[e.Name()] = string(data)
	}
	want := map[string]string{
		"convergo-r1-update-kube-apiserver-1.cpu":          "kube-apiserver 7s",
		"convergo-r1-update-kube-apiserver-2.cpu":          "kube-apiserver 7s",
		"convergo-r1-update-kube-apiserver-3.cpu":          "kube-apiserver 7s",
		"convergo-r1-update-kube-controller-manager-1.cpu": "kube-controller-manager 7s",
		"convergo-r1-update-kube-controller-manager-2.cpu": "kube-controller-manager 7s",
		"convergo-r1-update-kube-controller-manager-3.cpu": "kube-controller-manager 7s",
		"convergo-r1-update-kube-scheduler-1.cpu":          "kube-scheduler 7s",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("profiles written (-want +got):\n%s", diff)
	}
	calls := map[cluster.Component]int{}
	fake.mu.Lock()
	for c, n := range fake.calls {
		calls[c] = n
	}
	fake.mu.Unlock()
	wantCalls := map[cluster.Component]int{cluster.APIServer: 3, cluster.ControllerManager: 3, cluster.Scheduler: 2}
	if diff := cmp.Diff(wantCalls, calls); diff != "" {
		t.Errorf("profiles asked for (-want +got):\n%s", diff)
	}
}
