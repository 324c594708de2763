package bench

import (
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/convergo-dev/convergo/testing/harness"
)

// latencies records how long the manager's requests take, per verb and per verb and resource ("patch
// deployments", the keys of Phase.Writes), until the response headers arrive (for a watch: until it
// is established). It is safe for concurrent use.
type latencies struct {
	mu      sync.Mutex
	seconds map[string]float64
	counts  map[string]int
}

func newLatencies() *latencies {
	return &latencies{seconds: map[string]float64{}, counts: map[string]int{}}
}

// wrap returns a copy of cfg whose requests l times.
func (l *latencies) wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			start := time.Now()
			resp, err := rt.RoundTrip(req)
			d := time.Since(start)
			r := harness.ParseRequest(req.Method, req.URL.Path, req.URL.Query().Get("watch"))
			l.record(r.Verb, d)
			if r.Resource != "" {
				l.record(r.Verb+" "+r.FullResource(), d)
			}
			return resp, err
		})
	})
	return out
}

func (l *latencies) record(key string, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seconds[key] += d.Seconds()
	l.counts[key]++
}

// reset forgets what was recorded.
func (l *latencies) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.seconds)
	clear(l.counts)
}

// means returns the mean latency per key (verb, and verb and resource), in seconds.
func (l *latencies) means() map[string]float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]float64{}
	for verb, n := range l.counts {
		if n > 0 {
			out[verb] = l.seconds[verb] / float64(n)
		}
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
