package reconcile

import (
	"context"
	"mime"
	"net/http"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2"

	"github.com/convergo-dev/convergo/internal/jsonstrip"
)

// What NewCache does so that its informers never decode the managedFields their transform drops:
// the informers' lists and watches say so in their request's context (markedListerWatcher) and the
// cache's HTTP client strips managedFields from the JSON of the answers to those requests
// (stripTransport). An informer says so only when its transform is one that drops managedFields
// before anything else reads the object: LeanCache's, which answers a managedFieldsProbe. SlimCache's
// reads them (the applied digests), so it does not; neither does any transform of the caller's. The
// children's answers are protobuf anyway, which is left as it is; a custom resource's are JSON,
// decoded field by field, several passes over the bytes, and managedFields are often half of them.

// stripShapeKey is the context key under which an informer's request carries the jsonstrip.Shape of
// the answer it expects, when its managedFields are to be stripped.
type stripShapeKey struct{}

// managedFieldsProbe is what a leanWireInformer gives its transform to learn whether the transform
// drops managedFields before anything else reads the object.
type managedFieldsProbe struct{}

// droppedManagedFields is the answer to a managedFieldsProbe of a transform that does (LeanCache's).
type droppedManagedFields struct{}

// dropsManagedFields reports whether t answers a managedFieldsProbe with droppedManagedFields. A
// transform that does not know the probe returns something else, an error, or panics: none of them
// drops.
func dropsManagedFields(t toolscache.TransformFunc) (drops bool) {
	if t == nil {
		return false
	}
	defer func() {
		if recover() != nil {
			drops = false
		}
	}()
	out, err := t(managedFieldsProbe{})
	_, drops = out.(droppedManagedFields)
	return drops && err == nil
}

// newInformerFunc is the type of cache.Options.NewInformer.
type newInformerFunc func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer

// leanWireInformers returns the cache's NewInformer: next's informers (client-go's when nil), whose
// requests ask stripTransport to strip managedFields once their transform shows it drops them, and
// whose watches of a typed kind of scheme decode JSON answers themselves (see watchKind).
func leanWireInformers(next newInformerFunc, scheme *runtime.Scheme) newInformerFunc {
	if next == nil {
		next = toolscache.NewSharedIndexInformer
	}
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		m := &markedListerWatcher{ListerWatcherWithContext: toolscache.ToListerWatcherWithContext(lw), orig: lw, kind: newWatchKind(obj, scheme)}
		return &leanWireInformer{SharedIndexInformer: next(m, obj, resync, indexers), lw: m}
	}
}

// leanWireInformer is an informer whose transform decides whether its requests ask for managedFields
// to be stripped.
type leanWireInformer struct {
	toolscache.SharedIndexInformer
	lw *markedListerWatcher
}

// SetTransform sets the informer's transform, and marks its requests when the transform drops
// managedFields. controller-runtime sets it before the informer runs.
func (i *leanWireInformer) SetTransform(t toolscache.TransformFunc) error {
	if err := i.SharedIndexInformer.SetTransform(t); err != nil {
		return err
	}
	i.lw.strip.Store(dropsManagedFields(t))
	return nil
}

// markedListerWatcher lists and watches with the wrapped ListerWatcher, saying in the request's
// context, while strip is set, which jsonstrip.Shape the answer has.
type markedListerWatcher struct {
	toolscache.ListerWatcherWithContext
	orig  toolscache.ListerWatcher // for what the reflector asks of it
	strip atomic.Bool
	kind  *watchKind   // nil: client-go decodes the watches' answers
	own   atomic.Int64 // watches whose answers an eventDecoder decoded
}

// List lists without a context of its own.
func (m *markedListerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return m.ListWithContext(context.Background(), opts)
}

// Watch watches without a context of its own.
func (m *markedListerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return m.WatchWithContext(context.Background(), opts)
}

// ListWithContext lists, the answer marked as a list to strip when strip is set.
func (m *markedListerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if m.strip.Load() {
		ctx = context.WithValue(ctx, stripShapeKey{}, jsonstrip.List)
	}
	return m.ListerWatcherWithContext.ListWithContext(ctx, opts)
}

// WatchWithContext watches, the answer marked as events to strip when strip is set. With a kind, a
// JSON answer is decoded by an eventDecoder, not by client-go's decoder.
func (m *markedListerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	strip := m.strip.Load()
	if strip {
		ctx = context.WithValue(ctx, stripShapeKey{}, jsonstrip.Events)
	}
	if m.kind == nil {
		return m.ListerWatcherWithContext.WatchWithContext(ctx, opts)
	}
	h := &watchHandoff{}
	w, err := m.ListerWatcherWithContext.WatchWithContext(context.WithValue(ctx, watchHandoffKey{}, h), opts)
	body := h.take()
	switch {
	case body == nil: // not a JSON answer, or not a successful one
		return w, err
	case err != nil || w == nil:
		_ = body.Close()
		return w, err
	}
	w.Stop() // client-go's, of the empty body it was given
	m.own.Add(1)
	return watch.NewStreamWatcherWithLogger(klog.FromContext(ctx), m.kind.newEventDecoder(body, strip),
		// as client-go reports what it cannot decode
		apierrors.NewClientErrorReporter(http.StatusInternalServerError, http.MethodGet, "ClientWatchDecoding")), nil
}

// IsWatchListSemanticsUnSupported answers for the wrapped ListerWatcher: the reflector streams its
// initial list only when it may.
func (m *markedListerWatcher) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(m.orig)
}

// leanWireClient returns a copy of hc whose transport strips managedFields from the answers to
// marked requests and, unless compressed, asks for answers without gzip (stripTransport); the
// connections stay hc's.
func leanWireClient(hc *http.Client, compressed bool) *http.Client {
	c := *hc
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	// With a timeout, http.Client cancels a request when its caller closes the body: client-go
	// closing the empty body it was given would end the watch an eventDecoder reads.
	c.Transport = &stripTransport{next: next, compressed: compressed, handOff: hc.Timeout == 0}
	return &c
}

// stripTransport strips managedFields (jsonstrip) from the uncompressed JSON answer of a request
// whose context carries a jsonstrip.Shape; everything else passes as it is. Unless compressed, a
// request that names no encoding asks for none (Accept-Encoding: identity), so that Go's transport
// does not ask for gzip.
type stripTransport struct {
	next       http.RoundTripper
	compressed bool
	handOff    bool // a watch's answer may go to its watchHandoff
}

// RoundTrip sends req with the next transport and wraps the body of the answer when it is to be
// stripped.
func (t *stripTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.compressed && req.Header.Get("Accept-Encoding") == "" {
		req = req.Clone(req.Context()) // a RoundTripper must not change its caller's request
		req.Header.Set("Accept-Encoding", "identity")
	}
	resp, err := t.next.RoundTrip(req)
	handoff, handing := req.Context().Value(watchHandoffKey{}).(*watchHandoff)
	handing = handing && t.handOff
	shape, marked := req.Context().Value(stripShapeKey{}).(jsonstrip.Shape)
	if err != nil || !(marked || handing) || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "" {
		return resp, err
	}
	if mediaType, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mediaType != "application/json" {
		return resp, nil
	}
	if handing { // the watch's eventDecoder reads it, and strips it as its watch was marked
		handoff.give(resp.Body)
		resp.Body = http.NoBody
		return resp, nil
	}
	resp.Body = jsonstrip.NewReader(resp.Body, shape)
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	return resp, nil
}
