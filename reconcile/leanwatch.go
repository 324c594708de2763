package reconcile

import (
	"fmt"
	"io"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/watch"
	kjson "sigs.k8s.io/json"

	"github.com/convergo-dev/convergo/internal/jsonstrip"
)

// How NewCache's informers of typed kinds served in JSON (custom resources: the API server has no
// protobuf for them) decode their watch streams. client-go reads each event several times over before
// its object is decoded: the framer finds where the event ends (encoding/json), the event is decoded
// into a metav1.WatchEvent after a pass that looks for its apiVersion and kind (the whole event,
// validated twice), and the object is decoded after another such pass. In a restart of 1000
// Welcomes that took nearly 40% of a receiving process's CPU. Here the stream's events are found without
// decoding (jsonstrip.Frames) and split into type and object (jsonstrip.Event), and the object is
// decoded once, straight into the informer's type; only an object of another kind (an ERROR event's
// Status), or an event written otherwise than the API server writes it, is decoded the way client-go
// does. The request stays client-go's, made as controller-runtime asks: the transport hands the body
// of a successful JSON answer to the watch's markedListerWatcher (watchHandoff) instead of to
// client-go's decoder.

// watchKind is what eventDecoder needs to decode the objects of an informer's kind.
type watchKind struct {
	gvk  schema.GroupVersionKind
	typ  reflect.Type    // the struct gvk's objects decode into
	full runtime.Decoder // client-go's decoder: any kind the scheme knows, its version cleared
}

// newWatchKind returns the watchKind of obj, an informer's object in scheme; nil when its events are
// left to client-go: unstructured or metadata-only objects, and types the scheme knows by more than
// one kind or by none.
func newWatchKind(obj runtime.Object, scheme *runtime.Scheme) *watchKind {
	switch obj.(type) {
	case runtime.Unstructured, *metav1.PartialObjectMetadata:
		return nil
	}
	t := reflect.TypeOf(obj)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct || scheme == nil {
		return nil
	}
	gvks, unversioned, err := scheme.ObjectKinds(obj)
	if err != nil || unversioned || len(gvks) != 1 {
		return nil
	}
	return &watchKind{
		gvk:  gvks[0],
		typ:  t.Elem(),
		full: runtime.WithoutVersionDecoder{Decoder: jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, scheme, scheme, jsonserializer.SerializerOptions{})},
	}
}

// decode decodes raw, an object's JSON. An object of the kind is decoded once, into a new object of
// its type, whose apiVersion and kind are then cleared as client-go clears them; anything else is
// decoded by client-go's decoder, which also says why what does not decode does not.
func (k *watchKind) decode(raw []byte) (runtime.Object, error) {
	obj := reflect.New(k.typ).Interface().(runtime.Object) // the informer's type (newWatchKind)
	if kjson.UnmarshalCaseSensitivePreserveInts(raw, obj) == nil && obj.GetObjectKind().GroupVersionKind() == k.gvk {
		obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		return obj, nil
	}
	return runtime.Decode(k.full, raw)
}

// eventDecoder decodes a JSON watch stream of k's objects; it is a watch.Decoder.
type eventDecoder struct {
	frames *jsonstrip.Frames
	kind   *watchKind
}

// newEventDecoder returns the decoder of body, a watch's answer, whose objects lose their
// managedFields first when strip is set.
func (k *watchKind) newEventDecoder(body io.ReadCloser, strip bool) *eventDecoder {
	var shape jsonstrip.Shape
	if strip {
		shape = jsonstrip.Events
	}
	return &eventDecoder{frames: jsonstrip.NewFrames(body, shape), kind: k}
}

// Decode returns the next event, as client-go's watch decoder would. The body's errors are returned
// as they are (io.EOF at its end), for the watcher to tell an ended stream from a broken one.
func (d *eventDecoder) Decode() (watch.EventType, runtime.Object, error) {
	frame, err := d.frames.Next()
	if err != nil {
		return "", nil, err
	}
	typ, raw, ok := jsonstrip.Event(frame)
	if !ok { // not written as the API server writes events: decoded in full
		var got metav1.WatchEvent
		if err := kjson.UnmarshalCaseSensitivePreserveInts(frame, &got); err != nil {
			return "", nil, fmt.Errorf("decode watch event: %w", err)
		}
		typ, raw = []byte(got.Type), got.Object.Raw
	}
	var t watch.EventType
	switch string(typ) {
	case string(watch.Added):
		t = watch.Added
	case string(watch.Modified):
		t = watch.Modified
	case string(watch.Deleted):
		t = watch.Deleted
	case string(watch.Bookmark):
		t = watch.Bookmark
	case string(watch.Error):
		obj, err := runtime.Decode(d.kind.full, raw)
		if err != nil {
			return "", nil, fmt.Errorf("unable to decode watch event: %w", err)
		}
		return watch.Error, obj, nil
	default:
		return "", nil, fmt.Errorf("got invalid watch event type: %s", typ)
	}
	obj, err := d.kind.decode(raw)
	if err != nil {
		return "", nil, fmt.Errorf("unable to decode watch event: %w", err)
	}
	return t, obj, nil
}

// Close closes the body.
func (d *eventDecoder) Close() { _ = d.frames.Close() }

// watchHandoffKey is the context key under which a watch request carries its watchHandoff.
type watchHandoffKey struct{}

// watchHandoff is where stripTransport leaves the body of a successful JSON answer to a watch, for
// the markedListerWatcher that made the request; client-go gets an empty body in its place.
type watchHandoff struct {
	mu   sync.Mutex
	body io.ReadCloser
}

// give keeps body, closing one given before (client-go makes one request that succeeds; this is
// for safety).
func (h *watchHandoff) give(body io.ReadCloser) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.body != nil {
		_ = h.body.Close()
	}
	h.body = body
}

// take returns the body given, or nil.
func (h *watchHandoff) take() io.ReadCloser {
	h.mu.Lock()
	defer h.mu.Unlock()
	body := h.body
	h.body = nil
	return body
}
