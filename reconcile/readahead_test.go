package reconcile

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// chunkedBody is a body that has received chunks: each read returns at most the rest of the current
// chunk, as a connection returns only what it has received. It records the size of each read asked
// of it.
type chunkedBody struct {
	chunks [][]byte
	err    error // returned with the last byte
	asked  []int
	closed bool
}

func (c *chunkedBody) Read(p []byte) (int, error) {
	c.asked = append(c.asked, len(p))
	if len(c.chunks) == 0 {
		return 0, c.err
	}
	n := copy(p, c.chunks[0])
	if c.chunks[0] = c.chunks[0][n:]; len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	if len(c.chunks) == 0 {
		return n, c.err
	}
	return n, nil
}

func (c *chunkedBody) Close() error { c.closed = true; return nil }

// frames reads r as the protobuf framer does, a 4-byte length then the frame, until an error, and
// returns what it read and the error.
func frames(r io.Reader, size int) ([]byte, error) {
	var out []byte
	for {
		buf := make([]byte, 4+size)
		if _, err := io.ReadFull(r, buf[:4]); err != nil {
			return out, err
		}
		n, err := io.ReadFull(r, buf[4:])
		out = append(out, buf[:4+n]...)
		if err != nil {
			return out, err
		}
	}
}

func TestReadAheadBody(t *testing.T) {
	const frame = 1020 // with its length, a frame is 1 KiB
	stream := bytes.Repeat([]byte("0123456789abcdef"), 6<<10)[:96<<10]
	cases := map[string]struct {
		chunks [][]byte
		// asked is what the body is asked to read.
		asked []int
	}{
		"a list received whole: after the first length, parts of readAheadSize": {
			chunks: [][]byte{stream},
			asked:  []int{4, readAheadSize, readAheadSize, readAheadSize},
		},
		"events received one by one": {
			chunks: [][]byte{stream[:1<<10], stream[1<<10 : 2<<10]},
			// The first length fills its read, so the rest is read ahead; that was all the body had,
			// so the next length is read into the caller's slice again (the last one finds the end).
			asked: []int{4, readAheadSize, 4, readAheadSize, 4},
		},
		"a part that is not full": {
			chunks: [][]byte{stream[:40<<10], stream[40<<10 : 48<<10]},
			// The second part ends the first chunk: the next read is the caller's own length, which
			// fills, so the next is ahead again.
			asked: []int{4, readAheadSize, readAheadSize, 4, readAheadSize},
		},
		"a frame split between chunks": {
			chunks: [][]byte{stream[:1<<10+100], stream[1<<10+100 : 2<<10]},
			// The part ahead ends inside the second frame: the rest of that frame is the caller's read.
			asked: []int{4, readAheadSize, frame - 96, readAheadSize},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var want []byte
			for _, c := range tc.chunks {
				want = append(want, c...)
			}
			body := &chunkedBody{chunks: tc.chunks, err: io.EOF}
			r := newReadAheadBody(body)
			got, err := frames(r, frame)
			if !errors.Is(err, io.EOF) {
				t.Fatalf("read: %v, want EOF", err)
			}
			if !bytes.Equal(want, got) {
				t.Errorf("read %d bytes that differ from the body's %d", len(got), len(want))
			}
			if diff := cmp.Diff(tc.asked, body.asked); diff != "" {
				t.Errorf("reads asked of the body (-want +got):\n%s", diff)
			}
			if r.buf != nil {
				t.Error("holds a buffer once every byte was read")
			}
			if err := r.Close(); err != nil || !body.closed {
				t.Errorf("Close() = %v, body closed %v; want nil, true", err, body.closed)
			}
		})
	}
}

// TestReadAheadBodyError checks that an error the body returns with its last bytes comes after them.
func TestReadAheadBodyError(t *testing.T) {
	failed := errors.New("connection reset")
	body := &chunkedBody{chunks: [][]byte{bytes.Repeat([]byte("x"), 10<<10)}, err: failed}
	r := newReadAheadBody(body)
	got, err := frames(r, 1020)
	if !errors.Is(err, failed) {
		t.Errorf("read: %v, want %v", err, failed)
	}
	if diff := cmp.Diff(10<<10, len(got)); diff != "" {
		t.Errorf("bytes read before the error (-want +got):\n%s", diff)
	}
}
