package fakes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/convergo-dev/convergo/testing/internal/apirequest"
)

// InjectOption configures an Injector.
type InjectOption func(*injectConfig)

type injectConfig struct {
	rate      float64
	seed      uint64
	deletes   bool
	resources []string
	match     func(WriteRequest) bool
}

// WithInjectRate sets the fraction (0..1) of eligible write requests answered with a Conflict (default 0.5).
func WithInjectRate(rate float64) InjectOption {
	return func(c *injectConfig) { c.rate = rate }
}

// WithInjectSeed seeds the random choice of requests, so that a test is repeatable (default 1).
func WithInjectSeed(seed uint64) InjectOption {
	return func(c *injectConfig) { c.seed = seed }
}

// WithInjectDeletes makes delete and deletecollection requests eligible too (default: create, update and
// patch only).
func WithInjectDeletes() InjectOption {
	return func(c *injectConfig) { c.deletes = true }
}

// WithInjectResources limits injection to the given resources: "configmaps" is the resource itself,
// "widgets/status" its status subresource only, "widgets/*" the resource and all its subresources.
// Default: every resource.
func WithInjectResources(resources ...string) InjectOption {
	return func(c *injectConfig) { c.resources = append(c.resources, resources...) }
}

// WithInjectWhen limits injection to the write requests for which match returns true.
func WithInjectWhen(match func(WriteRequest) bool) InjectOption {
	return func(c *injectConfig) { c.match = match }
}

// WriteRequest describes a write request an Injector saw.
type WriteRequest struct {
	// Verb is create, update, patch, delete or deletecollection.
	Verb string
	// Group and Resource name the resource; Subresource is e.g. "status".
	Group, Resource, Subresource string
	// Namespace and Name are taken from the URL path (Name is empty for create and deletecollection).
	Namespace, Name string
}

// InjectedStats counts what an Injector did.
type InjectedStats struct {
	// Writes is the number of eligible write requests seen (injected or passed).
	Writes int
	// Conflicts is the number answered with a Conflict without reaching the API server.
	Conflicts int
	// ByResource counts conflicts per "resource" or "resource/subresource".
	ByResource map[string]int
}

// Injector answers a seeded fraction of write requests with 409 Conflict, without sending them, to
// test conflict handling against a real API server. Reads, watches and discovery always pass. It is safe
// for concurrent use.
type Injector struct {
	cfg injectConfig

	mu    sync.Mutex
	rnd   *rand.Rand
	stats InjectedStats
	off   bool
}

// NewInjector returns an Injector; wrap configs with Wrap.
func NewInjector(opts ...InjectOption) *Injector {
	cfg := injectConfig{rate: 0.5, seed: 1}
	for _, o := range opts {
		o(&cfg)
	}
	return &Injector{
		cfg:   cfg,
		rnd:   rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15)),
		stats: InjectedStats{ByResource: map[string]int{}},
	}
}

// InjectFaults returns a copy of cfg whose write requests are answered with 409 Conflict at the
// configured rate. Use NewInjector and Wrap when the test needs the counters or to switch injection off.
func InjectFaults(cfg *rest.Config, opts ...InjectOption) *rest.Config {
	return NewInjector(opts...).Wrap(cfg)
}

// Wrap returns a copy of cfg whose requests go through the injector.
func (i *Injector) Wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &injectingTransport{injector: i, next: rt}
	})
	return out
}

// SetEnabled switches injection on or off (it starts on), e.g. off for a test's setup.
func (i *Injector) SetEnabled(on bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.off = !on
}

// Stats returns a copy of the counters.
func (i *Injector) Stats() InjectedStats {
	i.mu.Lock()
	defer i.mu.Unlock()
	s := i.stats
	s.ByResource = make(map[string]int, len(i.stats.ByResource))
	for k, v := range i.stats.ByResource {
		s.ByResource[k] = v
	}
	return s
}

// decide reports whether to answer w with a Conflict.
func (i *Injector) decide(w WriteRequest) bool {
	if !i.eligible(w) {
		return false
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.off {
		return false
	}
	i.stats.Writes++
	if i.cfg.rate <= 0 || i.rnd.Float64() >= i.cfg.rate {
		return false
	}
	i.stats.Conflicts++
	i.stats.ByResource[resourceKey(w)]++
	return true
}

func (i *Injector) eligible(w WriteRequest) bool {
	switch w.Verb {
	case "create", "update", "patch":
	case "delete", "deletecollection":
		if !i.cfg.deletes {
			return false
		}
	default:
		return false
	}
	if len(i.cfg.resources) > 0 && !slices.ContainsFunc(i.cfg.resources, func(r string) bool { return apirequest.MatchResource(w.Resource, w.Subresource, r) }) {
		return false
	}
	return i.cfg.match == nil || i.cfg.match(w)
}

func resourceKey(w WriteRequest) string {
	if w.Subresource == "" {
		return w.Resource
	}
	return w.Resource + "/" + w.Subresource
}

type injectingTransport struct {
	injector *Injector
	next     http.RoundTripper
}

// RoundTrip answers an eligible write chosen by the injector with a Conflict and sends everything else on.
func (t *injectingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	w, ok := parseWrite(req.Method, req.URL.Path)
	if !ok || !t.injector.decide(w) {
		return t.next.RoundTrip(req)
	}
	// A RoundTripper must close the request body, also when it does not send the request.
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return conflictResponse(req, w)
}

// conflictResponse builds the 409 the API server sends for a stale write.
func conflictResponse(req *http.Request, w WriteRequest) (*http.Response, error) {
	status := apierrors.NewConflict(schema.GroupResource{Group: w.Group, Resource: w.Resource}, w.Name,
		errors.New("the object has been modified; please apply your changes to the latest version and try again (injected by convergo fakes)")).ErrStatus
	status.Kind = "Status"
	status.APIVersion = "v1"
	body, err := json.Marshal(status)
	if err != nil {
		return nil, fmt.Errorf("encode injected conflict: %w", err)
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", http.StatusConflict, http.StatusText(http.StatusConflict)),
		StatusCode:    http.StatusConflict,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
}

// parseWrite classifies a request by method and path; ok is false for reads and non-resource paths.
func parseWrite(method, path string) (WriteRequest, bool) {
	info, ok := apirequest.Parse(method, path, false)
	if !ok || !apirequest.IsWrite(info.Verb) {
		return WriteRequest{}, false
	}
	return WriteRequest{
		Verb:        info.Verb,
		Group:       info.Group,
		Resource:    info.Resource,
		Subresource: info.Subresource,
		Namespace:   info.Namespace,
		Name:        info.Name,
	}, true
}
