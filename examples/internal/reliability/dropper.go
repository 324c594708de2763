package reliability

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// EventDropper loses watch events on purpose: while it drops, the events of every watch made
// through the configs it wrapped vanish on their way to the client (bookmarks still pass, so the
// client's informers believe they are up to date and never ask again). A manager behind it ends up
// with a stale cache: objects created, changed or deleted meanwhile stay unknown to it until it
// restarts. It is safe for concurrent use.
type EventDropper struct {
	dropping atomic.Bool
	dropped  atomic.Int64
}

// Wrap returns a copy of cfg whose watch responses pass through the dropper. The copy asks for JSON,
// which the dropper reads.
func (d *EventDropper) Wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.ContentType = runtime.ContentTypeJSON
	out.AcceptContentTypes = runtime.ContentTypeJSON
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &dropTransport{dropper: d, next: rt} })
	return out
}

// SetDropping starts or stops dropping events.
func (d *EventDropper) SetDropping(on bool) { d.dropping.Store(on) }

// Dropped returns how many events were dropped so far.
func (d *EventDropper) Dropped() int64 { return d.dropped.Load() }

type dropTransport struct {
	dropper *EventDropper
	next    http.RoundTripper
}

// RoundTrip filters the body of watch responses.
func (t *dropTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK || !isWatch(req) {
		return resp, err
	}
	pr, pw := io.Pipe()
	body := resp.Body
	go t.filter(body, pw)
	resp.Body = &pipeBody{PipeReader: pr, upstream: body}
	resp.ContentLength = -1
	return resp, nil
}

func isWatch(req *http.Request) bool {
	w := req.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

// filter copies the JSON watch events of in to out, leaving out those that arrive while dropping.
func (t *dropTransport) filter(in io.ReadCloser, out *io.PipeWriter) {
	dec := json.NewDecoder(in)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			out.CloseWithError(err)
			return
		}
		var ev struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(raw, &ev); err == nil && ev.Type != "BOOKMARK" && ev.Type != "ERROR" && t.dropper.dropping.Load() {
			t.dropper.dropped.Add(1)
			continue
		}
		if _, err := out.Write(append(raw, '\n')); err != nil {
			in.Close()
			return
		}
	}
}

// pipeBody is the filtered body; closing it also closes the upstream body, which ends the filter.
type pipeBody struct {
	*io.PipeReader
	upstream io.Closer
	once     sync.Once
}

// Close closes both ends.
func (b *pipeBody) Close() error {
	b.once.Do(func() { b.upstream.Close() })
	return b.PipeReader.Close()
}
