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
