package harness

import (
	"io"
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// WatchGate holds back the watch events of the clients built on a config it wraps, while paused: a
// manager started with gate.Wrap(env.Config) has a cache that shows nothing new between Pause and
// Resume, so a test can put the code under test exactly where a lagging informer leaves it (a child
// just created that the cache does not show, an object deleted that it still shows). Requests that
// are not watches pass untouched. DelayWatches lags every event by a fixed time instead.
//
//	gate := harness.NewWatchGate("configmaps")
//	mgr := env.StartManager(t, setup, harness.WithManagerConfig(gate.Wrap(env.Config)))
//	gate.Pause()
//	t.Cleanup(gate.Resume)
//	// ... the manager's cache shows no ConfigMap change from here until Resume
type WatchGate struct {
	mu   sync.Mutex
	open chan struct{} // closed while the gate is open
	// only, when set, names the resources (plural) whose watches the gate holds.
	only []string
}

// NewWatchGate returns an open gate for the watches of resources (plural names, such as
// "configmaps"), or of every resource when none is named.
func NewWatchGate(resources ...string) *WatchGate {
	open := make(chan struct{})
	close(open)
	return &WatchGate{open: open, only: resources}
}

// Pause holds every watch event received from now on (a read already waiting for data too) until
// Resume. Pausing a paused gate does nothing.
func (g *WatchGate) Pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
		g.open = make(chan struct{})
	default:
	}
}

// Resume lets the held events through, in order, and every later one. Resuming an open gate does
// nothing.
func (g *WatchGate) Resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

// Wrap returns a copy of cfg whose watches of the gate's resources pass through the gate.
func (g *WatchGate) Wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper { return gatedTransport{next: rt, gate: g} })
	return out
}

// wait returns once the gate is open.
func (g *WatchGate) wait() {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	<-open
}

// holds reports whether the gate applies to a request for path.
func (g *WatchGate) holds(path string) bool {
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

type gatedTransport struct {
	next http.RoundTripper
	gate *WatchGate
}

// RoundTrip passes the request on and gates the body of a watch response of the gate's resources.
func (t gatedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if w := req.URL.Query().Get("watch"); err == nil && (w == "true" || w == "1") && t.gate.holds(req.URL.Path) {
		resp.Body = &gatedBody{ReadCloser: resp.Body, gate: t.gate}
	}
	return resp, err
}

// gatedBody hands what it read to the reader only while the gate is open.
type gatedBody struct {
	io.ReadCloser
	gate *WatchGate
}

// Read reads, then waits for the gate to be open before returning.
func (b *gatedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.gate.wait()
	return n, err
}
