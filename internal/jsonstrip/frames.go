package jsonstrip

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Frames reads a stream of top-level JSON objects or arrays (a watch stream's events) one value at
// a time, each stripped of managedFields as NewReader strips it when a Shape is given.
type Frames struct {
	body      io.ReadCloser
	shape     Shape  // 0: values are returned as they are
	in        []byte // read from body; in[:done] is returned or skipped already
	done      int
	find      finder // how far the end of the value at in[done] was looked for, while scanning
	scanning  bool
	streaming bool   // the last read filled the buffer: more is likely waiting
	out       []byte // the last stripped value's storage, reused
	err       error  // body's, once it returned one
}

// NewFrames returns a reader of the values in body; with shape 0 they are not stripped. Close closes
// body.
func NewFrames(body io.ReadCloser, shape Shape) *Frames {
	return &Frames{body: body, shape: shape}
}

// errNotContainer is Next's error for a top-level value that is neither an object nor an array.
var errNotContainer = errors.New("jsonstrip: a top-level value is not an object or an array")

// Next returns the next value, valid until the next call. A value Strip cannot read is returned as
// it is, for its decoder to report. At the end of body Next returns io.EOF, or io.ErrUnexpectedEOF
// when body ended inside a value; body's other errors as they are.
func (f *Frames) Next() ([]byte, error) {
	for {
		if !f.scanning {
			for f.done < len(f.in) && isSpace(f.in[f.done]) {
				f.done++
			}
			if f.done < len(f.in) {
				if c := f.in[f.done]; c != '{' && c != '[' {
					return nil, fmt.Errorf("%w: %q", errNotContainer, c)
				}
				f.find, f.scanning = finder{pos: f.done}, true
			}
		}
		if f.scanning {
			if end := f.find.end(f.in); end >= 0 {
				value := f.in[f.done:end]
				f.done, f.scanning = end, false
				if f.shape != 0 {
					if out, ok := Strip(f.out[:0], value, f.shape); ok {
						f.out = out
						return out, nil
					}
				}
				return value, nil
			}
		}
		if f.err != nil {
			if f.err == io.EOF && (f.scanning || f.done < len(f.in)) {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, f.err
		}
		f.fill()
	}
}

// idleSize is the buffer of Frames between values while the body gives little at a time: a watch
// that has caught up gets an event now and then, and keeps this much for it rather than the most
// it needed while it streamed its initial list (readSize at a time).
const idleSize = 4 << 10

// fill drops what was returned, sizes the buffer, then reads from body once.
func (f *Frames) fill() {
	kept := copy(f.in, f.in[f.done:])
	if f.scanning {
		f.find.pos -= f.done
	}
	f.in, f.done = f.in[:kept], 0
	switch free := cap(f.in) - kept; {
	case f.streaming && free < readSize/2:
		f.in = append(make([]byte, 0, kept+readSize), f.in...)
	case free == 0: // a value longer than the buffer, or the first read
		f.in = append(make([]byte, 0, max(2*kept, idleSize)), f.in...)
	case !f.streaming && kept == 0 && cap(f.in) > idleSize:
		f.in = make([]byte, 0, idleSize)
	}
	room := f.in[kept:cap(f.in)]
	n, err := f.body.Read(room)
	f.in = f.in[:kept+n]
	f.streaming = n == len(room) // the body had at least as much as the buffer could take
	if err != nil {
		f.err = err
	}
}

// Close closes body.
func (f *Frames) Close() error { return f.body.Close() }

// Event returns the members of a watch event, {"type":"ADDED","object":{...}}: the type's string
// without its quotes, and the object's JSON, as found, unchecked. ok is false unless the event is an
// object with both members once each, a type without escapes, and nothing after it; whoever reads
// such an event decodes it in full.
func Event(frame []byte) (typ, object []byte, ok bool) {
	s := scanner{b: frame}
	if !s.at('{') {
		return nil, nil, false
	}
	s.i++
	for n := 0; ; n++ {
		if s.at('}') {
			s.i++
			s.space()
			return typ, object, typ != nil && object != nil && s.i == len(s.b)
		}
		if n > 0 {
			if !s.at(',') {
				return nil, nil, false
			}
			s.i++
		}
		if !s.at('"') {
			return nil, nil, false
		}
		keyStart := s.i
		if !s.str() {
			return nil, nil, false
		}
		key := s.b[keyStart:s.i]
		if bytes.IndexByte(key, '\\') >= 0 || !s.at(':') { // a key with escapes may name either member
			return nil, nil, false
		}
		s.i++
		s.space()
		valueStart := s.i
		if !s.skip() {
			return nil, nil, false
		}
		value := s.b[valueStart:s.i]
		switch {
		case isKey(key, "type"):
			if typ != nil || len(value) < 2 || value[0] != '"' || bytes.IndexByte(value, '\\') >= 0 {
				return nil, nil, false
			}
			typ = value[1 : len(value)-1]
		case isKey(key, "object"):
			if object != nil {
				return nil, nil, false
			}
			object = value
		}
	}
}
