package harness

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/rest"

	"github.com/convergo-dev/convergo/testing/internal/apirequest"
)

// Request is one API request, classified the way the API server's RequestInfo does.
type Request struct {
	// Verb is get, list, watch, create, update, patch, delete or deletecollection for resource
	// requests, and the lower-case HTTP method for other paths.
	Verb string
	// APIGroup is the resource's group ("" for the core group).
	APIGroup string
	// APIVersion is the resource's version.
	APIVersion string
	// Resource is the plural resource name, "" for non-resource requests (discovery, /version, ...).
	Resource string
	// Subresource is e.g. "status" or "scale", "" for the resource itself.
	Subresource string
	// Namespace is the namespace in the path, "" for cluster-scoped or all-namespace requests.
	Namespace string
	// Name is the object name in the path.
	Name string
	// Path is the URL path, for non-resource requests.
	Path string
	// StatusCode is the HTTP status of the response, 0 when the request failed without one.
	StatusCode int
	// Time is when the request was sent, from time.Now: it carries the monotonic clock reading, so
	// Before, After and Compare order it against other times taken in this process (when an
	// External was called, optest.Call.Time), whatever the wall clock does. It is zero in a Request
	// that ParseRequest returns.
	Time time.Time
}

// ResourceRequest reports whether r addresses an API resource (as opposed to discovery or /version).
func (r Request) ResourceRequest() bool { return r.Resource != "" }

// FullResource returns "resource" or "resource/subresource".
func (r Request) FullResource() string {
	if r.Subresource == "" {
		return r.Resource
	}
	return r.Resource + "/" + r.Subresource
}

// IsWrite reports whether r is a create, update, patch, delete or deletecollection.
func (r Request) IsWrite() bool { return r.ResourceRequest() && apirequest.IsWrite(r.Verb) }

// Requests is a list of recorded requests, in the order their answers came (a RequestCounter records
// a request once it is answered; Request.Time says when it was sent).
type Requests []Request

// Count returns how many requests have the verb and resource. An empty verb or resource matches any;
// "pods" matches the pods resource itself, "pods/status" its status subresource and "pods/*" pods with
// or without a subresource.
func (rs Requests) Count(verb, resource string) int {
	return len(rs.Filter(func(r Request) bool {
		return (verb == "" || r.Verb == verb) && apirequest.MatchResource(r.Resource, r.Subresource, resource)
	}))
}

// Writes returns the number of create, update, patch, delete and deletecollection requests.
func (rs Requests) Writes() int {
	return len(rs.Filter(Request.IsWrite))
}

// Filter returns the requests for which keep returns true.
func (rs Requests) Filter(keep func(Request) bool) Requests {
	var out Requests
	for _, r := range rs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// InNamespace returns the requests whose path names namespace ns.
func (rs Requests) InNamespace(ns string) Requests {
	return rs.Filter(func(r Request) bool { return r.Namespace == ns })
}

// ByVerb returns the number of requests per verb.
func (rs Requests) ByVerb() map[string]int {
	out := map[string]int{}
	for _, r := range rs {
		out[r.Verb]++
	}
	return out
}

// String renders a table of counts per verb and resource, for test logs.
func (rs Requests) String() string {
	type key struct{ verb, resource string }
	counts := map[key]int{}
	for _, r := range rs {
		res := r.FullResource()
		if !r.ResourceRequest() {
			res = r.Path
		}
		counts[key{r.Verb, res}]++
	}
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b key) int {
		if c := strings.Compare(a.resource, b.resource); c != 0 {
			return c
		}
		return strings.Compare(a.verb, b.verb)
	})
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "VERB\tRESOURCE\tCOUNT")
	for _, k := range keys {
		fmt.Fprintf(w, "%s\t%s\t%d\n", k.verb, k.resource, counts[k])
	}
	fmt.Fprintf(w, "total\t\t%d\n", len(rs))
	w.Flush()
	return b.String()
}

// RequestCounter records the API requests made through the configs it wraps. It is safe for
// concurrent use; the zero value is ready.
type RequestCounter struct {
	mu   sync.Mutex
	reqs Requests
}

// NewRequestCounter returns an empty counter.
func NewRequestCounter() *RequestCounter { return &RequestCounter{} }

// Wrap returns a copy of cfg whose requests are recorded by c.
func (c *RequestCounter) Wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &countingTransport{counter: c, next: rt}
	})
	return out
}

// Reset forgets every recorded request, e.g. to start measuring after setup.
func (c *RequestCounter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = nil
}

// Snapshot returns a copy of the requests recorded so far.
func (c *RequestCounter) Snapshot() Requests {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.reqs)
}

func (c *RequestCounter) record(r Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, r)
}

type countingTransport struct {
	counter *RequestCounter
	next    http.RoundTripper
}

// RoundTrip records the request and sends it on.
func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	info := ParseRequest(req.Method, req.URL.Path, req.URL.Query().Get("watch"))
	info.Time = time.Now()
	resp, err := t.next.RoundTrip(req)
	if resp != nil {
		info.StatusCode = resp.StatusCode
	}
	t.counter.record(info)
	return resp, err
}

// ParseRequest classifies a request by HTTP method, URL path and the value of its watch query
// parameter, following the API server's RequestInfo rules.
func ParseRequest(method, path, watchParam string) Request {
	info, ok := apirequest.Parse(method, path, watchParam == "true" || watchParam == "1")
	if !ok {
		return Request{Verb: info.Verb, Path: path} // discovery, /version, /healthz, /openapi ...
	}
	return Request{
		Verb:        info.Verb,
		APIGroup:    info.Group,
		APIVersion:  info.Version,
		Resource:    info.Resource,
		Subresource: info.Subresource,
		Namespace:   info.Namespace,
		Name:        info.Name,
	}
}
