package jsonstrip

import (
	"bytes"
	"io"
)

// Shape is the shape of a response body: where its objects are.
type Shape uint8

const (
	// Events is a stream of watch events, {"type":"ADDED","object":{...}} one after the other: each
	// event's object loses its metadata.managedFields.
	Events Shape = iota + 1
	// List is one list, {"kind":"...List","items":[{...},...]}: each item loses its
	// metadata.managedFields.
	List
)

// paths are the members Strip descends, per Shape, to the metadata objects it strips; "*" stands
// for each element of an array.
var paths = map[Shape][]string{
	Events: {"object", "metadata"},
	List:   {"items", "*", "metadata"},
}

// managedFields is the member Strip removes, as the API server writes its key.
var managedFields = []byte(`"managedFields"`)

// Strip appends the JSON value doc to dst without the managedFields member of the metadata of the
// objects shape places in it. Nothing else changes, except the whitespace between the members of the
// objects on the way (the API server writes none). A key written with escapes is not recognised and
// stays, and so does anything in doc that is not where shape places an object's metadata. ok is
// false when doc is not one complete JSON value of that shape as far as Strip reads it; what it
// appended to dst is then to be discarded.
func Strip(dst, doc []byte, shape Shape) (out []byte, ok bool) {
	path, known := paths[shape]
	if !known {
		return dst, false
	}
	s := scanner{b: doc}
	out, ok = s.descend(dst, path)
	if !ok {
		return dst, false
	}
	if s.space(); s.i != len(doc) {
		return dst, false
	}
	return out, true
}

// scanner reads one JSON document. It finds where values end without checking everything inside
// them: the decoder that reads its output does.
type scanner struct {
	b []byte
	i int
}

// space skips whitespace.
func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// at reports whether the next byte, after whitespace, is c.
func (s *scanner) at(c byte) bool {
	s.space()
	return s.i < len(s.b) && s.b[s.i] == c
}

// str skips the string that starts at s.i.
func (s *scanner) str() bool {
	i := s.i + 1
	for {
		j := bytes.IndexByte(s.b[i:], '"')
		if j < 0 {
			return false
		}
		end := i + j
		escapes := 0
		for k := end - 1; k >= i && s.b[k] == '\\'; k-- {
			escapes++
		}
		i = end + 1
		if escapes%2 == 0 {
			s.i = i
			return true
		}
	}
}

// skip skips one value.
func (s *scanner) skip() bool {
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		return s.str()
	case '{', '[':
		f := finder{pos: s.i}
		end := f.end(s.b)
		if end < 0 {
			return false
		}
		s.i = end
		return true
	default: // a number, true, false or null: up to the next delimiter
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.i > start
			case '{', '[', '"', ':':
				return false
			}
			s.i++
		}
		return s.i > start // at the end of the document (inside an object or array, what follows fails)
	}
}

// descend copies the value at s.i to dst, descending path; at its end, the value is a metadata
// object whose managedFields it leaves out. A value that is not of the expected kind (null, or
// anything else) is copied as it is.
func (s *scanner) descend(dst []byte, path []string) ([]byte, bool) {
	switch {
	case len(path) > 0 && path[0] == "*" && s.at('['):
		return s.array(dst, path[1:])
	case (len(path) == 0 || path[0] != "*") && s.at('{'):
		return s.object(dst, path)
	}
	start := s.i
	if !s.skip() {
		return dst, false
	}
	return append(dst, s.b[start:s.i]...), true
}

// array copies the array at s.i, descending path in each element.
func (s *scanner) array(dst []byte, path []string) ([]byte, bool) {
	s.i++ // [
	dst = append(dst, '[')
	for n := 0; ; n++ {
		if s.at(']') {
			s.i++
			return append(dst, ']'), true
		}
		if n > 0 {
			if !s.at(',') {
				return dst, false
			}
			s.i++
			dst = append(dst, ',')
		}
		var ok bool
		if dst, ok = s.descend(dst, path); !ok {
			return dst, false
		}
	}
}

// object copies the object at s.i: the member path[0] descending path[1:], the others as they are;
// with path empty, without its managedFields.
func (s *scanner) object(dst []byte, path []string) ([]byte, bool) {
	s.i++ // {
	dst = append(dst, '{')
	kept := 0
	for n := 0; ; n++ {
		if s.at('}') {
			s.i++
			return append(dst, '}'), true
		}
		if n > 0 {
			if !s.at(',') {
				return dst, false
			}
			s.i++
		}
		if !s.at('"') {
			return dst, false
		}
		keyStart := s.i
		if !s.str() {
			return dst, false
		}
		key := s.b[keyStart:s.i]
		if !s.at(':') {
			return dst, false
		}
		s.i++
		switch {
		case len(path) == 0 && bytes.Equal(key, managedFields):
			if !s.skip() {
				return dst, false
			}
			continue
		case len(path) > 0 && isKey(key, path[0]):
			if kept > 0 {
				dst = append(dst, ',')
			}
			dst = append(append(dst, key...), ':')
			var ok bool
			if dst, ok = s.descend(dst, path[1:]); !ok {
				return dst, false
			}
		default:
			if !s.skip() {
				return dst, false
			}
			if kept > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, s.b[keyStart:s.i]...)
		}
		kept++
	}
}

// isKey reports whether key, a JSON string with its quotes, is name.
func isKey(key []byte, name string) bool {
	return len(key) == len(name)+2 && string(key[1:len(key)-1]) == name
}

// reader is NewReader's: it strips each complete top-level value it has read, and passes everything
// on as it is from the first value it cannot strip.
type reader struct {
	body  io.ReadCloser
	shape Shape
	in    []byte // read from body, not yet stripped
	out   []byte // stripped, not yet returned
	buf   []byte // out's storage, reused
	find  finder // how far the end of the value at the start of in was looked for
	plain bool   // a value could not be stripped: the rest goes through as it is
	err   error  // body's, once it returned one
}

// readSize is how much reader asks body for at a time.
const readSize = 32 * 1024

// NewReader returns a reader of body with managedFields stripped (see Strip) from each top-level
// JSON value, which body holds in the given shape. Each value is stripped and passed on as soon as
// body has given all of it. From the first value Strip cannot read, the rest of body is passed on
// unchanged, for its decoder to report. Close closes body.
func NewReader(body io.ReadCloser, shape Shape) io.ReadCloser {
	return &reader{body: body, shape: shape}
}

func (r *reader) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if !r.plain {
			r.strip()
			if len(r.out) > 0 {
				break
			}
		}
		if r.plain || r.err != nil {
			if len(r.in) > 0 { // what is left goes as it is
				r.out, r.in = r.in, nil
				break
			}
			if r.err != nil {
				return 0, r.err
			}
		}
		r.fill()
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

// fill reads from body once.
func (r *reader) fill() {
	if cap(r.in)-len(r.in) < readSize {
		grown := make([]byte, len(r.in), 2*cap(r.in)+readSize)
		copy(grown, r.in)
		r.in = grown
	}
	n, err := r.body.Read(r.in[len(r.in):cap(r.in)])
	r.in = r.in[:len(r.in)+n]
	if err != nil {
		r.err = err
	}
}

// strip strips the complete values at the start of in into out, keeping the whitespace between them,
// and leaves an incomplete last value in in. A value that is not an object or an array, or that
// Strip cannot read, or that body ended in the middle of, turns plain mode on.
func (r *reader) strip() {
	out := r.buf[:0]
	done := 0
	for {
		start := done
		for start < len(r.in) && isSpace(r.in[start]) {
			start++
		}
		if start == len(r.in) {
			break
		}
		if c := r.in[start]; c != '{' && c != '[' {
			r.plain = true
			break
		}
		if r.find.pos <= start { // a new value: the last one's finder was reset
			r.find = finder{pos: start}
		}
		end := r.find.end(r.in)
		if end < 0 {
			if r.err != nil {
				r.plain = true
			}
			break
		}
		out = append(out, r.in[done:start]...)
		var ok bool
		if out, ok = Strip(out, r.in[start:end], r.shape); !ok {
			r.plain = true
			done = start
			break
		}
		done = end
	}
	if r.plain {
		out = append(out, r.in[done:]...)
		done = len(r.in)
	}
	r.buf, r.out = out, out
	r.in = r.in[:copy(r.in, r.in[done:])]
	r.find.pos -= done
}

// finder looks for the end of an object or array, across reads: it resumes where it stopped.
type finder struct {
	pos      int // the next byte to look at
	depth    int
	inString bool
	escaped  bool
}

// end returns the index in in after the value whose first byte was at the finder's first pos, and
// resets the finder; -1 when in ends first.
func (f *finder) end(in []byte) int {
	for i := f.pos; i < len(in); i++ {
		c := in[i]
		if f.inString {
			switch {
			case f.escaped:
				f.escaped = false
			case c == '\\':
				f.escaped = true
			case c == '"':
				f.inString = false
			}
			continue
		}
		switch c {
		case '"':
			f.inString = true
		case '{', '[':
			f.depth++
		case '}', ']':
			f.depth--
			if f.depth == 0 {
				*f = finder{}
				return i + 1
			}
		}
	}
	f.pos = len(in)
	return -1
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (r *reader) Close() error { return r.body.Close() }
