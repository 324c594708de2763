package harness

import (
	"io"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
)

// DelayWatches returns a copy of cfg whose watches deliver every event lag after the API server sent
// it: a manager started with it (WithManagerConfig) has a cache that lags behind the API server by
// lag, as a loaded informer does, while its reads and writes go through at once. Plain lists are not
// delayed; an informer's first list that comes as watch events (client-go's watch-list, on by default
// with Kubernetes 1.37) is, so the cache syncs lag late. Run an invariant test with it as well as with
// a current cache: code that takes the cache for the truth fails there.
//
//	mgr := env.StartManager(t, setup, harness.WithManagerConfig(harness.DelayWatches(env.Config, 300*time.Millisecond)))
func DelayWatches(cfg *rest.Config, lag time.Duration) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper { return delayedWatches{next: rt, lag: lag} })
	return out
}

// delayedWatches holds back the body of every watch response by lag.
type delayedWatches struct {
	next http.RoundTripper
	lag  time.Duration
}

func (d delayedWatches) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := d.next.RoundTrip(req)
	if err != nil || d.lag <= 0 || req.URL.Query().Get("watch") != "true" {
		return resp, err
	}
	type chunk struct {
		data []byte
		at   time.Time
	}
	chunks := make(chan chunk, 1024)
	body := resp.Body
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := body.Read(buf)
			if n > 0 {
				chunks <- chunk{buf[:n], time.Now().Add(d.lag)}
			}
			if err != nil {
				return
			}
		}
	}()
	pr, pw := io.Pipe()
	go func() {
		for c := range chunks {
			time.Sleep(time.Until(c.at))
			if _, err := pw.Write(c.data); err != nil {
				break
			}
		}
		_ = pw.Close()
	}()
	resp.Body = pipeBody{PipeReader: pr, body: body}
	return resp, nil
}

// pipeBody is the delayed body: closing it closes the pipe and the API server's response.
type pipeBody struct {
	*io.PipeReader
	body io.Closer
}

func (p pipeBody) Close() error {
	_ = p.PipeReader.Close()
	return p.body.Close()
}
