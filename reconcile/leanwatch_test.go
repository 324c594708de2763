package reconcile_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	restclientwatch "k8s.io/client-go/rest/watch"

	"github.com/convergo-dev/convergo/internal/jsonstrip"
	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/reconcile"
)

// decodedStream is what a watch decoder made of a stream: its events, and how it ended.
type decodedStream struct {
	Events []watch.Event
	End    string // "EOF", "unexpected EOF", "body error", or "error" for any other
}

// decodeAll decodes events with dec until it returns an error.
func decodeAll(dec watch.Decoder, bodyErr error) decodedStream {
	defer dec.Close()
	var got decodedStream
	for {
		typ, obj, err := dec.Decode()
		switch {
		case err == nil:
			got.Events = append(got.Events, watch.Event{Type: typ, Object: obj})
			continue
		case errors.Is(err, io.EOF):
			got.End = "EOF"
		case errors.Is(err, io.ErrUnexpectedEOF):
			got.End = "unexpected EOF"
		case bodyErr != nil && errors.Is(err, bodyErr):
			got.End = "body error"
		default:
			got.End = "error"
		}
		return got
	}
}

// clientGoDecoder is the decoder client-go gives a controller-runtime informer for a JSON watch of
// Widgets (its rest client's negotiated serializer, without conversion).
func clientGoDecoder(t testing.TB, s *runtime.Scheme, body io.Reader) watch.Decoder {
	t.Helper()
	codecs := serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(s)}
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		t.Fatal("no JSON serializer")
	}
	return restclientwatch.NewDecoder(
		streaming.NewDecoder(info.StreamSerializer.Framer.NewFrameReader(io.NopCloser(body)), info.StreamSerializer.Serializer),
		codecs.DecoderToVersion(info.Serializer, testapi.GroupVersion))
}

// TestEventDecoderDecodesAsClientGo checks that NewCache's decoder of a JSON watch stream gives the
// events client-go's gives, and ends where and how client-go's does, for the streams the API server
// writes and for streams written otherwise; with managedFields stripped, it gives what client-go
// gives for the stripped stream.
func TestEventDecoderDecodesAsClientGo(t *testing.T) {
	s := runtime.NewScheme()
	if err := testapi.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	metav1.AddToGroupVersion(s, metav1.SchemeGroupVersion)
	const (
		widget   = `{"apiVersion":"test.convergo.dev/v1alpha1","kind":"Widget","metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"7","generation":2,"managedFields":[{"manager":"m","operation":"Apply","apiVersion":"test.convergo.dev/v1alpha1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:data":{"f:greeting":{}}}}}]},"spec":{"data":{"greeting":"h\"i\\"}},"status":{"observedGeneration":2,"conditions":[{"type":"Ready","status":"True","observedGeneration":2,"lastTransitionTime":"2026-11-29T00:00:00Z","reason":"Done","message":"ok"}]}}`
		bookmark = `{"apiVersion":"test.convergo.dev/v1alpha1","kind":"Widget","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}`
		gone     = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (9)","reason":"Expired","code":410}`
		cm       = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`
	)
	ev := func(typ, obj string) string { return `{"type":"` + typ + `","object":` + obj + "}\n" }
	cases := map[string]struct {
		stream  string
		bodyErr error // returned by the body after the stream
	}{
		"the API server's events":            {stream: ev("ADDED", widget) + ev("MODIFIED", widget) + ev("BOOKMARK", bookmark) + ev("DELETED", widget) + ev("ERROR", gone)},
		"no events":                          {stream: ""},
		"members in another order":           {stream: `{"object":` + widget + `,"type":"ADDED"}`},
		"a key with escapes":                 {stream: `{"typ\u0065":"MODIFIED","object":` + widget + `}`},
		"a member more":                      {stream: `{"type":"ADDED","extra":[1,{"a":"}"}],"object":` + widget + `}`},
		"whitespace everywhere":              {stream: " \n{ \"type\" : \"ADDED\" ,\n \"object\" :\t" + widget + " }\r\n\n" + ev("DELETED", widget)},
		"a Status in ADDED":                  {stream: ev("ADDED", gone)},
		"a kind the scheme does not know":    {stream: ev("ADDED", widget) + ev("ADDED", cm)},
		"a version the scheme does not know": {stream: ev("ADDED", strings.Replace(widget, "v1alpha1", "v9", 1))},
		"no kind":                            {stream: ev("ADDED", `{"metadata":{"name":"a"}}`)},
		"an invalid type":                    {stream: ev("ADDED", widget) + ev("CHANGED", widget)},
		"no type":                            {stream: `{"object":` + widget + `}`},
		"a null object":                      {stream: ev("ADDED", "null")},
		"an object that does not decode":     {stream: ev("ADDED", strings.Replace(widget, `"generation":2`, `"generation":"two"`, 1))},
		"a number between events":            {stream: ev("ADDED", widget) + "42\n" + ev("ADDED", widget)},
		"cut in an event":                    {stream: ev("ADDED", widget) + ev("MODIFIED", widget)[:100]},
		"cut in a string":                    {stream: ev("ADDED", widget)[:40]},
		"a body error":                       {stream: ev("ADDED", widget), bodyErr: errors.New("stream reset")},
	}
	for name, tc := range cases {
		for _, strip := range []bool{false, true} {
			t.Run(name+map[bool]string{true: ",stripped"}[strip], func(t *testing.T) {
				body := func() io.ReadCloser {
					// One byte at a time: every event spans many reads.
					r := iotest.OneByteReader(strings.NewReader(tc.stream))
					if tc.bodyErr != nil {
						r = io.MultiReader(r, iotest.ErrReader(tc.bodyErr))
					}
					return io.NopCloser(r)
				}
				var want decodedStream
				if strip {
					want = decodeAll(clientGoDecoder(t, s, jsonstrip.NewReader(body(), jsonstrip.Events)), tc.bodyErr)
				} else {
					want = decodeAll(clientGoDecoder(t, s, body()), tc.bodyErr)
				}
				dec := reconcile.NewEventDecoder(body(), &testapi.Widget{}, s, strip)
				if dec == nil {
					t.Fatal("no decoder for Widgets")
				}
				got := decodeAll(dec, tc.bodyErr)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("decoded (-client-go +NewCache's):\n%s", diff)
				}
			})
		}
	}
}

// TestEventDecoderStrips checks that the decoder of a marked watch drops managedFields and nothing
// else, and that it is given only for the typed kinds it decodes.
func TestEventDecoderStrips(t *testing.T) {
	s := runtime.NewScheme()
	if err := testapi.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	w := &testapi.Widget{
		TypeMeta: metav1.TypeMeta{APIVersion: testapi.GroupVersion.String(), Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", Labels: map[string]string{"l": "v"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationApply}}},
		Spec: testapi.WidgetSpec{Data: map[string]string{"k": "v"}},
	}
	raw, err := runtime.Encode(serializer.NewCodecFactory(s).LegacyCodec(testapi.GroupVersion), w)
	if err != nil {
		t.Fatal(err)
	}
	stream := `{"type":"ADDED","object":` + string(bytes.TrimSpace(raw)) + "}\n"
	_, obj, err := reconcile.NewEventDecoder(io.NopCloser(strings.NewReader(stream)), &testapi.Widget{}, s, true).Decode()
	if err != nil {
		t.Fatal(err)
	}
	want := w.DeepCopy()
	want.TypeMeta, want.ManagedFields = metav1.TypeMeta{}, nil
	if diff := cmp.Diff(want, obj); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}

	others := map[string]runtime.Object{
		"a kind the scheme does not know": &corev1.ConfigMap{},
		"metadata only":                   &metav1.PartialObjectMetadata{},
		"unstructured":                    &unstructured.Unstructured{},
		"unversioned":                     &metav1.Status{},
	}
	metav1.AddToGroupVersion(s, metav1.SchemeGroupVersion)
	metav1.AddToGroupVersion(s, testapi.GroupVersion)
	for name, obj := range others {
		t.Run(name, func(t *testing.T) {
			if dec := reconcile.NewEventDecoder(io.NopCloser(strings.NewReader("")), obj, s, false); dec != nil {
				t.Errorf("a decoder for %T; want client-go's", obj)
			}
		})
	}
}
