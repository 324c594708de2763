//go:build integration

package reconcile_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/testing/harness"
)

// watchGate holds back the bodies of watch responses while paused, so that a cache built on a
// config it wraps deliberately lags behind the API server: no watch event reaches the informers
// until resume. Requests that are not watches pass untouched.
type watchGate struct {
	mu   sync.Mutex
	open chan struct{} // closed while the gate is open
	// only, when set, names the resources (plural, e.g. "configmaps") whose watches the gate holds;
	// the watches of other resources pass.
	only []string
}

func newWatchGate() *watchGate {
	open := make(chan struct{})
	close(open)
	return &watchGate{open: open}
}

// newWatchGateFor returns a gate that holds only the watches of the given resources.
func newWatchGateFor(resources ...string) *watchGate {
	g := newWatchGate()
	g.only = resources
	return g
}

// holds reports whether the gate applies to a request for path.
func (g *watchGate) holds(path string) bool {
	if len(g.only) == 0 {
		return true
	}
	for _, r := range g.only {
		if strings.HasSuffix(path, "/"+r) {
			return true
		}
	}
	return false
}

func (g *watchGate) pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
		g.open = make(chan struct{})
	default: // already paused
	}
}

func (g *watchGate) resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

func (g *watchGate) wait() {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	<-open
}

func (g *watchGate) wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper { return gatedTransport{next: rt, gate: g} })
	return out
}

type gatedTransport struct {
	next http.RoundTripper
	gate *watchGate
}

func (t gatedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if w := req.URL.Query().Get("watch"); err == nil && (w == "true" || w == "1") && t.gate.holds(req.URL.Path) {
		resp.Body = &gatedBody{ReadCloser: resp.Body, gate: t.gate}
	}
	return resp, err
}

// gatedBody hands what it read to the reader only while the gate is open (a read already waiting for
// data when the gate closes is held too).
type gatedBody struct {
	io.ReadCloser
	gate *watchGate
}

func (b *gatedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.gate.wait()
	return n, err
}

// TestIntegrationApplyNoSecondCreateWhileCacheLags: the manager's cache is held behind the API
// server (its watch events are withheld), so it does not show a child the Applier has just created.
// Applying the child again right away must not write it again when the Applier has the manager's API
// reader (one GET instead); without one, the second create is refused by the API server (it never
// overwrites an object the cache does not show) and the error names mgr.GetAPIReader(). Once the cache
// catches up, applying costs no request at all.
func TestIntegrationApplyNoSecondCreateWhileCacheLags(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	counter := harness.NewRequestCounter()
	gate := newWatchGate()
	mgr := env.StartManager(t, nil, harness.WithManagerConfig(gate.wrap(counter.Wrap(env.Config))))
	t.Cleanup(gate.resume) // before the manager stops (cleanups run last-registered first)

	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}}
	if err := env.Client.Create(t.Context(), owner); err != nil {
		t.Fatal(err)
	}
	// Start the ConfigMap informer and let it see the owner; then withhold its watch events.
	harness.Eventually(t, waitTimeout, func() (bool, string) {
		err := mgr.GetClient().Get(t.Context(), client.ObjectKeyFromObject(owner), &corev1.ConfigMap{})
		return err == nil, fmt.Sprintf("owner not in the cache: %v", err)
	})
	gate.pause()

	type figures struct {
		Ops    []apply.Operation
		Writes int
		Gets   int
	}
	cases := map[string]struct {
		child     string
		apiReader client.Reader
		want      figures
	}{
		"with the API reader": {
			child:     "child-reader",
			apiReader: mgr.GetAPIReader(),
			want:      figures{Ops: []apply.Operation{apply.OperationCreated, apply.OperationUnchanged}, Writes: 1, Gets: 1},
		},
		// Given the cached client as its reader, the Applier cannot tell: the create is refused (the
		// child exists), nothing is overwritten, and the error says what to do.
		"the cached client as API reader": {
			child:     "child-plain",
			apiReader: mgr.GetClient(),
			want:      figures{Ops: []apply.Operation{apply.OperationCreated, "error: GetAPIReader"}, Writes: 2},
		},
	}
	appliers := map[string]*apply.Applier{}
	desired := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := apply.NewApplier(mgr.GetClient(), tc.apiReader)
			appliers[tc.child] = a
			counter.Reset()
			var got figures
			for range 2 {
				_, op, err := a.Apply(t.Context(), owner, desired(tc.child))
				if err != nil {
					op = "error: " + apply.Operation(err.Error())
					if strings.Contains(err.Error(), "mgr.GetAPIReader()") {
						op = "error: GetAPIReader"
					}
				}
				got.Ops = append(got.Ops, op)
			}
			reqs := counter.Snapshot().InNamespace(ns)
			got.Writes, got.Gets = reqs.Writes(), reqs.Count("get", "configmaps")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("two applies while the cache lags (-want +got):\n%s\nrequests:\n%s", diff, reqs)
			}
			// The lag is real: the cache still does not show the child.
			err := mgr.GetClient().Get(t.Context(), client.ObjectKey{Namespace: ns, Name: tc.child}, &corev1.ConfigMap{})
			if !apierrors.IsNotFound(err) {
				t.Errorf("cache read of %s while paused = %v, want NotFound", tc.child, err)
			}
		})
	}

	// The cache catches up: applying again is Unchanged and costs no request.
	gate.resume()
	for child := range appliers {
		harness.Eventually(t, waitTimeout, func() (bool, string) {
			err := mgr.GetClient().Get(t.Context(), client.ObjectKey{Namespace: ns, Name: child}, &corev1.ConfigMap{})
			return err == nil, fmt.Sprintf("%s not in the cache: %v", child, err)
		})
	}
	counter.Reset()
	for child, a := range appliers {
		if _, op, err := a.Apply(t.Context(), owner, desired(child)); err != nil || op != apply.OperationUnchanged {
			t.Errorf("apply %s once the cache caught up = %s, %v; want Unchanged", child, op, err)
		}
	}
	if reqs := counter.Snapshot().InNamespace(ns); len(reqs) != 0 {
		t.Errorf("applies of cached, unchanged children made %d requests, want 0:\n%s", len(reqs), reqs)
	}
}
