package jsonstrip

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

func TestStrip(t *testing.T) {
	cases := map[string]struct {
		shape  Shape
		doc    string
		want   string
		wantOK bool
	}{
		"event: managedFields last": {
			shape:  Events,
			doc:    `{"type":"ADDED","object":{"kind":"Welcome","metadata":{"name":"a","managedFields":[{"manager":"m","fieldsV1":{"f:spec":{}}}]},"spec":{"x":1}}}`,
			want:   `{"type":"ADDED","object":{"kind":"Welcome","metadata":{"name":"a"},"spec":{"x":1}}}`,
			wantOK: true,
		},
		"event: managedFields first and alone": {
			shape:  Events,
			doc:    `{"type":"MODIFIED","object":{"metadata":{"managedFields":[]}}}`,
			want:   `{"type":"MODIFIED","object":{"metadata":{}}}`,
			wantOK: true,
		},
		"event: managedFields between, whitespace around": {
			shape:  Events,
			doc:    "{ \"object\" : { \"metadata\" : { \"name\" : \"a\" , \"managedFields\" : [ {\"a\":\"}\"} ] , \"uid\" : \"u\" } } , \"type\" : \"ADDED\" }",
			want:   `{"object":{"metadata":{"name" : "a","uid" : "u"}},"type" : "ADDED"}`,
			wantOK: true,
		},
		"event: elsewhere it stays": {
			shape: Events,
			doc: `{"type":"ADDED","object":{"managedFields":1,"spec":{"metadata":{"managedFields":2}},` +
				`"metadata":{"annotations":{"managedFields":"3"},"name":"managedFields"}}}`,
			want: `{"type":"ADDED","object":{"managedFields":1,"spec":{"metadata":{"managedFields":2}},` +
				`"metadata":{"annotations":{"managedFields":"3"},"name":"managedFields"}}}`,
			wantOK: true,
		},
		"event: strings with escaped quotes and brackets": {
			shape:  Events,
			doc:    `{"type":"ADDED","object":{"metadata":{"name":"a\"}]","managedFields":[{"m":"\\\"{["}],"labels":{"k":"v\\"}}}}`,
			want:   `{"type":"ADDED","object":{"metadata":{"name":"a\"}]","labels":{"k":"v\\"}}}}`,
			wantOK: true,
		},
		"event: an escaped key is not recognised": {
			shape:  Events,
			doc:    `{"type":"ADDED","object":{"metadata":{"managed\u0046ields":[]}}}`,
			want:   `{"type":"ADDED","object":{"metadata":{"managed\u0046ields":[]}}}`,
			wantOK: true,
		},
		"event: error with a Status": {
			shape:  Events,
			doc:    `{"type":"ERROR","object":{"kind":"Status","metadata":{},"status":"Failure","code":410}}`,
			want:   `{"type":"ERROR","object":{"kind":"Status","metadata":{},"status":"Failure","code":410}}`,
			wantOK: true,
		},
		"event: null object and metadata": {
			shape:  Events,
			doc:    `{"type":"ADDED","object":null,"x":{"metadata":null}}`,
			want:   `{"type":"ADDED","object":null,"x":{"metadata":null}}`,
			wantOK: true,
		},
		"list: every item": {
			shape: List,
			doc: `{"kind":"WelcomeList","metadata":{"resourceVersion":"9","managedFields":[]},"items":[` +
				`{"metadata":{"name":"a","managedFields":[{"f":1}]}},{"metadata":{"managedFields":[],"name":"b"}},{"metadata":{"name":"c"}}]}`,
			want: `{"kind":"WelcomeList","metadata":{"resourceVersion":"9","managedFields":[]},"items":[` +
				`{"metadata":{"name":"a"}},{"metadata":{"name":"b"}},{"metadata":{"name":"c"}}]}`,
			wantOK: true,
		},
		"list: empty and null items": {
			shape:  List,
			doc:    `{"items":[],"more":{"items":null}}`,
			want:   `{"items":[],"more":{"items":null}}`,
			wantOK: true,
		},
		"not an object":       {shape: Events, doc: `"text"`, want: `"text"`, wantOK: true},
		"numbers, literals":   {shape: Events, doc: `{"a":-1.5e+3,"b":true,"c":null,"object":{"metadata":{"managedFields":false}}}`, want: `{"a":-1.5e+3,"b":true,"c":null,"object":{"metadata":{}}}`, wantOK: true},
		"cut short":           {shape: Events, doc: `{"type":"ADDED","object":{"metadata":{"managedFields":[{`},
		"cut short in string": {shape: Events, doc: `{"type":"ADDED","object":{"metadata":{"name":"ab`},
		"two values":          {shape: Events, doc: `{"a":1} {"b":2}`},
		"missing colon":       {shape: Events, doc: `{"object" {"metadata":{}}}`},
		"missing comma":       {shape: Events, doc: `{"a":1 "object":{}}`},
		"key not a string":    {shape: Events, doc: `{a:1}`},
		"unknown shape":       {shape: 0, doc: `{}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			prefix := []byte("kept:")
			got, ok := Strip(prefix, []byte(tc.doc), tc.shape)
			if ok != tc.wantOK {
				t.Fatalf("Strip() ok = %v, want %v (output %q)", ok, tc.wantOK, got)
			}
			want := "kept:" + tc.want
			if !ok {
				want = "kept:"
			}
			if diff := cmp.Diff(want, string(got)); diff != "" {
				t.Errorf("Strip() (-want +got):\n%s", diff)
			}
		})
	}
}

// stream is three watch events as the API server writes them, and what NewReader should make of them.
const (
	stream = `{"type":"ADDED","object":{"metadata":{"name":"a","managedFields":[{"manager":"x"}]},"spec":{}}}` + "\n" +
		`{"type":"MODIFIED","object":{"metadata":{"name":"b","managedFields":[{"manager":"y","fieldsV1":{"f:spec":{".":{}}}}]}}}` + "\n" +
		`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}}` + "\n"
	strippedStream = `{"type":"ADDED","object":{"metadata":{"name":"a"},"spec":{}}}` + "\n" +
		`{"type":"MODIFIED","object":{"metadata":{"name":"b"}}}` + "\n" +
		`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}}` + "\n"
)

func TestNewReader(t *testing.T) {
	long := strings.Repeat("x", 3*readSize)
	cases := map[string]struct {
		shape Shape
		body  string
		want  string
	}{
		"events":          {shape: Events, body: stream, want: strippedStream},
		"empty":           {shape: Events, body: "", want: ""},
		"only whitespace": {shape: Events, body: " \n", want: " \n"},
		"an event longer than a read": {
			shape: Events,
			body:  `{"type":"ADDED","object":{"metadata":{"name":"` + long + `","managedFields":[]}}}`,
			want:  `{"type":"ADDED","object":{"metadata":{"name":"` + long + `"}}}`,
		},
		"list": {
			shape: List,
			body:  `{"items":[{"metadata":{"managedFields":[],"name":"a"}}]}`,
			want:  `{"items":[{"metadata":{"name":"a"}}]}`,
		},
		"malformed from the second event on: the rest as it is": {
			shape: Events,
			body:  stream[:strings.Index(stream, "\n")+1] + `{"type":"ADDED" "object":{"metadata":{"managedFields":[]}}}` + "\n" + stream,
			want:  strippedStream[:strings.Index(strippedStream, "\n")+1] + `{"type":"ADDED" "object":{"metadata":{"managedFields":[]}}}` + "\n" + stream,
		},
		"cut short at the end: as it is": {
			shape: Events,
			body:  stream + `{"type":"ADDED","object":{"metadata":{"managedFields":[`,
			want:  strippedStream + `{"type":"ADDED","object":{"metadata":{"managedFields":[`,
		},
	}
	for name, tc := range cases {
		for rname, wrap := range readers {
			t.Run(name+"/"+rname, func(t *testing.T) {
				r := NewReader(io.NopCloser(wrap(strings.NewReader(tc.body))), tc.shape)
				got, err := io.ReadAll(iotest.OneByteReader(r))
				if err != nil {
					t.Fatalf("read: %v", err)
				}
				if diff := cmp.Diff(tc.want, string(got)); diff != "" {
					t.Errorf("NewReader() (-want +got):\n%s", diff)
				}
				if err := r.Close(); err != nil {
					t.Errorf("Close(): %v", err)
				}
			})
		}
	}
}

// readers are the ways a test's body gives its bytes: all at once, one at a time, half of what is
// asked for.
var readers = map[string]func(io.Reader) io.Reader{
	"whole":    func(r io.Reader) io.Reader { return r },
	"one byte": iotest.OneByteReader,
	"half":     iotest.HalfReader,
}

// TestNewReaderBodyError: an error of the body reaches the reader's caller after what was read.
func TestNewReaderBodyError(t *testing.T) {
	body := io.MultiReader(strings.NewReader(stream), iotest.ErrReader(io.ErrUnexpectedEOF))
	got, err := io.ReadAll(NewReader(io.NopCloser(body), Events))
	if err != io.ErrUnexpectedEOF {
		t.Errorf("error = %v, want %v", err, io.ErrUnexpectedEOF)
	}
	if diff := cmp.Diff(strippedStream, string(got)); diff != "" {
		t.Errorf("read before the error (-want +got):\n%s", diff)
	}
}

// FuzzStrip holds Strip to encoding/json: for any document encoding/json accepts, Strip's output
// decodes to the document without the managedFields of object.metadata (an event) or of each
// items[*].metadata (a list), and nothing else differs.
func FuzzStrip(f *testing.F) {
	for _, seed := range []string{
		stream[:strings.Index(stream, "\n")],
		`{"items":[{"metadata":{"managedFields":[],"name":"a"}},{"metadata":null},7]}`,
		`{"object":{"metadata":{"managedFields":{"a":"\"]}"},"x":[1,2,{"y":"\\"}]}}}`,
		`{"object":[],"items":{}}`,
		` {"object" : {"metadata" : {"managedFields" : null}}} `,
	} {
		f.Add([]byte(seed), true)
		f.Add([]byte(seed), false)
	}
	f.Fuzz(func(t *testing.T, doc []byte, events bool) {
		shape := List
		if events {
			shape = Events
		}
		var want any
		if err := json.Unmarshal(doc, &want); err != nil {
			Strip(nil, doc, shape) // must not panic
			return
		}
		if hasDuplicateOrEscapedKeys(doc) {
			return // encoding/json keeps the last of two keys, and reads escapes Strip leaves alone
		}
		out, ok := Strip(nil, doc, shape)
		if !ok {
			t.Fatalf("Strip(%q) refused a document encoding/json accepts", doc)
		}
		var got any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("Strip(%q) = %q, which does not decode: %v", doc, out, err)
		}
		removeManagedFields(want, shape)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Strip(%q) = %q (-want +got):\n%s", doc, out, diff)
		}
	})
}

// removeManagedFields deletes, in the decoded doc, what Strip removes.
func removeManagedFields(doc any, shape Shape) {
	top, ok := doc.(map[string]any)
	if !ok {
		return
	}
	strip := func(obj any) {
		if o, ok := obj.(map[string]any); ok {
			if md, ok := o["metadata"].(map[string]any); ok {
				delete(md, "managedFields")
			}
		}
	}
	switch shape {
	case Events:
		strip(top["object"])
	case List:
		if items, ok := top["items"].([]any); ok {
			for _, it := range items {
				strip(it)
			}
		}
	}
}

// hasDuplicateOrEscapedKeys reports whether some object of doc has a key twice or a key written
// with an escape.
func hasDuplicateOrEscapedKeys(doc []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(doc))
	type frame struct {
		keys      map[string]bool
		object    bool
		expectKey bool
	}
	var stack []*frame
	prev := int64(0)
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		raw := strings.TrimLeft(string(doc[prev:dec.InputOffset()]), " \t\r\n,:")
		prev = dec.InputOffset()
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if key, ok := tok.(string); ok && top != nil && top.object && top.expectKey {
			if top.keys[key] || raw != `"`+key+`"` {
				return true
			}
			top.keys[key] = true
			top.expectKey = false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			stack = append(stack, &frame{keys: map[string]bool{}, object: tok == json.Delim('{'), expectKey: tok == json.Delim('{')})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				continue
			}
			top = stack[len(stack)-1]
		}
		if top != nil && top.object {
			top.expectKey = true // a value ended: a key comes next
		}
	}
}
