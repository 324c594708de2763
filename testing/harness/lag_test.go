package harness

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
)

// TestDelayWatches: a watch's body is delivered whole through the delay, other bodies untouched, and
// the config given is left as it was.
func TestDelayWatches(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, line := range []string{`{"type":"ADDED"}` + "\n", `{"type":"MODIFIED"}` + "\n"} {
			_, _ = io.WriteString(w, line)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	base := &rest.Config{Host: srv.URL}
	cfg := DelayWatches(base, 10*time.Millisecond)
	if base.WrapTransport != nil {
		t.Fatal("DelayWatches changed the config it was given")
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		query   string
		delayed bool
	}{
		"watch": {query: "?watch=true", delayed: true},
		"list":  {query: "", delayed: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/api/v1/configmaps"+tc.query, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			_, delayed := resp.Body.(pipeBody)
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if err := resp.Body.Close(); err != nil {
				t.Fatal(err)
			}
			want := `{"type":"ADDED"}` + "\n" + `{"type":"MODIFIED"}` + "\n"
			if diff := cmp.Diff([2]any{want, tc.delayed}, [2]any{string(body), delayed}); diff != "" {
				t.Errorf("(body, delayed) (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWatchGate: while paused, a watch of a gated resource returns nothing; on Resume it returns what
// was held. A watch of another resource and a plain request pass while paused.
func TestWatchGate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"type":"ADDED"}`+"\n")
	}))
	t.Cleanup(srv.Close)
	gate := NewWatchGate("configmaps")
	base := &rest.Config{Host: srv.URL}
	rt, err := rest.TransportFor(gate.Wrap(base))
	if err != nil {
		t.Fatal(err)
	}
	if base.WrapTransport != nil {
		t.Fatal("Wrap changed the config it was given")
	}
	read := func(path string) <-chan string {
		out := make(chan string, 1)
		go func() {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
			if err != nil {
				out <- err.Error()
				return
			}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				out <- err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			out <- string(b)
		}()
		return out
	}
	gate.Pause()
	gated := read("/api/v1/configmaps?watch=true")
	for name, path := range map[string]string{"another resource's watch": "/api/v1/secrets?watch=true", "a list": "/api/v1/configmaps"} {
		select {
		case got := <-read(path):
			if got != `{"type":"ADDED"}`+"\n" {
				t.Errorf("%s while paused: %q", name, got)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s was held by the paused gate", name)
		}
	}
	select {
	case got := <-gated:
		t.Fatalf("the gated watch returned %q while paused", got)
	case <-time.After(100 * time.Millisecond):
	}
	gate.Resume()
	if got := <-gated; got != `{"type":"ADDED"}`+"\n" {
		t.Errorf("the gated watch after Resume: %q", got)
	}
}
