package jsonstrip

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// TestFrames checks that Frames returns each top-level value, stripped as Strip strips it when given
// a shape, however the body's reads cut the stream, and how it says the stream ended.
func TestFrames(t *testing.T) {
	long := strings.Repeat("x", 3*readSize)
	events := strings.Split(strings.TrimSpace(stream), "\n")
	stripped := strings.Split(strings.TrimSpace(strippedStream), "\n")
	bodyErr := errors.New("stream reset")
	cases := map[string]struct {
		shape   Shape
		body    string
		bodyErr error
		want    []string
		wantErr error
	}{
		"events":                    {shape: Events, body: stream, want: stripped, wantErr: io.EOF},
		"events, not stripped":      {body: stream, want: events, wantErr: io.EOF},
		"empty":                     {shape: Events, body: "", wantErr: io.EOF},
		"only whitespace":           {shape: Events, body: " \r\n\t", wantErr: io.EOF},
		"no whitespace between":     {body: `{"a":"}"}[1,{"b":[]}]`, want: []string{`{"a":"}"}`, `[1,{"b":[]}]`}, wantErr: io.EOF},
		"a value longer than reads": {body: `{"type":"ADDED","object":{"metadata":{"name":"` + long + `"}}}`, want: []string{`{"type":"ADDED","object":{"metadata":{"name":"` + long + `"}}}`}, wantErr: io.EOF},
		"one Strip cannot read: as it is": {
			shape:   Events,
			body:    `{"type":"ADDED" "object":{"metadata":{"managedFields":[]}}}` + "\n" + events[0],
			want:    []string{`{"type":"ADDED" "object":{"metadata":{"managedFields":[]}}}`, stripped[0]},
			wantErr: io.EOF,
		},
		"cut in a value":              {body: events[0] + "\n" + events[1][:20], want: events[:1], wantErr: io.ErrUnexpectedEOF},
		"a number":                    {body: events[0] + "\n7\n", want: events[:1], wantErr: errNotContainer},
		"the body's error":            {body: events[0], bodyErr: bodyErr, want: events[:1], wantErr: bodyErr},
		"the body's error in a value": {body: events[0][:10], bodyErr: bodyErr, wantErr: bodyErr},
	}
	for name, tc := range cases {
		for rname, wrap := range readers {
			t.Run(name+"/"+rname, func(t *testing.T) {
				body := wrap(strings.NewReader(tc.body))
				if tc.bodyErr != nil {
					body = io.MultiReader(body, iotest.ErrReader(tc.bodyErr))
				}
				f := NewFrames(io.NopCloser(body), tc.shape)
				var got []string
				var err error
				for {
					var value []byte
					if value, err = f.Next(); err != nil {
						break
					}
					got = append(got, string(value))
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("values (-want +got):\n%s", diff)
				}
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("ended with %v, want %v", err, tc.wantErr)
				}
				if err := f.Close(); err != nil {
					t.Errorf("Close(): %v", err)
				}
			})
		}
	}
}

// TestEvent checks how Event splits watch events, and which it leaves to a full decoder.
func TestEvent(t *testing.T) {
	cases := map[string]struct {
		frame    string
		typ, obj string
		ok       bool
	}{
		"as the API server writes it": {frame: `{"type":"ADDED","object":{"a":"}"}}`, typ: "ADDED", obj: `{"a":"}"}`, ok: true},
		"members in another order":    {frame: `{"object":[1],"type":"ERROR"}`, typ: "ERROR", obj: `[1]`, ok: true},
		"whitespace":                  {frame: " { \"type\" :\n\"DELETED\" , \"object\" : null } ", typ: "DELETED", obj: `null`, ok: true},
		"a member more":               {frame: `{"type":"ADDED","x":{"type":"no"},"object":{}}`, typ: "ADDED", obj: `{}`, ok: true},
		"an empty type":               {frame: `{"type":"","object":{}}`, typ: "", obj: `{}`, ok: true},
		"no object":                   {frame: `{"type":"ADDED"}`},
		"no type":                     {frame: `{"object":{}}`},
		"two types":                   {frame: `{"type":"ADDED","type":"DELETED","object":{}}`},
		"two objects":                 {frame: `{"type":"ADDED","object":{},"object":{}}`},
		"a type with escapes":         {frame: `{"type":"ADD\u0045D","object":{}}`},
		"a type that is no string":    {frame: `{"type":7,"object":{}}`},
		"a key with escapes":          {frame: `{"typ\u0065":"ADDED","type":"DELETED","object":{}}`},
		"something after it":          {frame: `{"type":"ADDED","object":{}} {}`},
		"not an object":               {frame: `["ADDED",{}]`},
		"no colon":                    {frame: `{"type" "ADDED","object":{}}`},
		"no comma":                    {frame: `{"type":"ADDED" "object":{}}`},
		"cut short":                   {frame: `{"type":"ADDED","object":{"a":`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			typ, obj, ok := Event([]byte(tc.frame))
			type split struct {
				Type, Object string
				OK           bool
			}
			want := split{Type: tc.typ, Object: tc.obj, OK: tc.ok}
			got := split{OK: ok}
			if ok {
				got.Type, got.Object = string(typ), string(obj)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Event(%q) (-want +got):\n%s", tc.frame, diff)
			}
		})
	}
}

// FuzzEvent holds Event to encoding/json: an event Event splits decodes, with encoding/json, to the
// same type and an object equal to the one Event found.
func FuzzEvent(f *testing.F) {
	for _, seed := range []string{
		`{"type":"ADDED","object":{"metadata":{"name":"a"}}}`,
		`{"object":[1,"]"],"type":"ERROR"}`,
		` {"type" : "X" , "o":1, "object" : null } `,
		`{"type":"A\"B","object":{}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		typ, obj, ok := Event(frame)
		if !ok {
			return
		}
		var ev struct {
			Type   *string         `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		dec := json.NewDecoder(bytes.NewReader(frame))
		if err := dec.Decode(&ev); err != nil {
			return // not JSON: Event does not validate, the object's decoder does
		}
		lower := bytes.ToLower(frame)
		if !utf8.Valid(frame) || hasDuplicateOrEscapedKeys(frame) || bytes.Count(lower, []byte(`"type"`)) > 1 || bytes.Count(lower, []byte(`"object"`)) > 1 {
			// encoding/json replaces invalid UTF-8, keeps the last of two keys and matches keys
			// whatever their case
			return
		}
		if ev.Type == nil || *ev.Type != string(typ) {
			t.Fatalf("Event(%q) type %q, encoding/json %v", frame, typ, ev.Type)
		}
		var want, got any
		if err := json.Unmarshal(ev.Object, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(obj, &got); err != nil {
			t.Fatalf("Event(%q) object %q does not decode: %v", frame, obj, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Event(%q) object (-encoding/json +Event):\n%s", frame, diff)
		}
	})
}

// parts is a body whose reads never span two of its parts: a stream that sends the first part at
// once and then one part now and then.
type parts struct{ left []string }

func (p *parts) Read(b []byte) (int, error) {
	for len(p.left) > 0 && p.left[0] == "" {
		p.left = p.left[1:]
	}
	if len(p.left) == 0 {
		return 0, io.EOF
	}
	n := copy(b, p.left[0])
	p.left[0] = p.left[0][n:]
	return n, nil
}

// TestFramesBuffer checks how much Frames keeps: what a streaming body and the longest value need
// while the body streams, within bounds, and idleSize once the body gives an event now and then.
func TestFramesBuffer(t *testing.T) {
	event := `{"type":"MODIFIED","object":{"metadata":{"name":"a"}}}` + "\n"
	long := `{"type":"ADDED","object":{"metadata":{"name":"` + strings.Repeat("x", 5*readSize) + `"}}}` + "\n"
	listed := strings.Repeat(event, 2000) + long + strings.Repeat(event, 2000)
	f := NewFrames(io.NopCloser(&parts{left: []string{listed, event, event, event}}), 0)
	type sizes struct {
		Values      int
		HeldLong    bool // the buffer grew to the longest value
		Bounded     bool // and never beyond it by more than two reads' size
		CapAtTheEnd int
	}
	var got sizes
	largest := 0
	for {
		if _, err := f.Next(); err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		got.Values++
		largest = max(largest, cap(f.in))
	}
	got.HeldLong, got.Bounded, got.CapAtTheEnd = largest >= len(long)-1, largest <= len(long)+2*readSize, cap(f.in)
	want := sizes{Values: 4004, HeldLong: true, Bounded: true, CapAtTheEnd: idleSize}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Frames' buffer (largest %d bytes) (-want +got):\n%s", largest, diff)
	}
}
