package reconcile

import (
	"io"
	"sync"
)

// readAheadSize is how much a readAheadBody asks of its body at a time while the body has more.
const readAheadSize = 32 << 10

// readAheadBuffers are the buffers readAheadBodies read into, each lent only while it holds bytes
// not yet read.
var readAheadBuffers = sync.Pool{New: func() any { b := make([]byte, readAheadSize); return &b }}

// readAheadBody reads a protobuf list or watch answer in parts of readAheadSize while the answer has
// more, whatever the size of the reads asked of it.
//
// The cache's informers decode a protobuf list or watch (every built-in kind's) a frame at a time:
// a 4-byte length, then an object of a kilobyte or two, each its own read of the answer's body. Over
// HTTP/2, each 4 KiB read sends the API server a flow-control window update and flushes the
// connection (a TLS record and a system call): at a restart's lists, 3% of the manager's CPU. Read
// in larger parts, the same bytes send a window update per part.
//
// A read of the body returns what the connection has received, never waiting for more. So a
// readAheadBody reads ahead only after a read of the body filled what it was given (the answer likely
// has more, as in a list); otherwise it reads into the caller's slice. A watch waiting for its next
// event therefore waits without a buffer, but for the rare wait that begins right after a full part.
type readAheadBody struct {
	body io.ReadCloser
	buf  *[]byte // borrowed, holding (*buf)[r:w] not yet read; nil when empty
	r, w int
	err  error // the body's error, returned once buf is empty
	more bool  // the last read of the body filled what it was given
}

// newReadAheadBody returns body read ahead.
func newReadAheadBody(body io.ReadCloser) *readAheadBody { return &readAheadBody{body: body} }

// Read reads what the buffer holds, or reads the body: ahead into a borrowed buffer when it likely
// has more, into p when not.
func (b *readAheadBody) Read(p []byte) (int, error) {
	switch {
	case len(p) == 0:
		return 0, nil
	case b.buf != nil:
		n := copy(p, (*b.buf)[b.r:b.w])
		if b.r += n; b.r == b.w {
			readAheadBuffers.Put(b.buf)
			b.buf = nil
		}
		return n, nil
	case b.err != nil:
		return 0, b.err
	case !b.more || len(p) >= readAheadSize:
		n, err := b.body.Read(p)
		b.more = n == len(p)
		return n, err
	}
	buf := readAheadBuffers.Get().(*[]byte)
	w, err := b.body.Read(*buf)
	b.more = w == len(*buf)
	n := copy(p, (*buf)[:w])
	if n == w {
		readAheadBuffers.Put(buf)
		return n, err
	}
	b.buf, b.r, b.w, b.err = buf, n, w, err
	return n, nil
}

// Close closes the body. It may run while a Read waits (a watch stopped), so it leaves the buffer
// alone.
func (b *readAheadBody) Close() error { return b.body.Close() }
