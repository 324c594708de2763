package harness

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"
)

// TestPartition: requests through the relay reach the server until Cut, fail while cut, and reach it
// again after Mend, at the same address.
func TestPartition(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	t.Cleanup(srv.Close)
	p := NewPartition(t, &rest.Config{Host: srv.URL})
	cfg := p.Config()
	client := srv.Client()
	get := func() error {
		resp, err := client.Get(cfg.Host)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	steps := []struct {
		name string
		do   func()
		ok   bool
	}{
		{name: "through", ok: true},
		{name: "cut", do: p.Cut},
		{name: "mended", do: func() {
			if err := p.Mend(); err != nil {
				t.Fatal(err)
			}
		}, ok: true},
	}
	for _, s := range steps {
		if s.do != nil {
			s.do()
		}
		client.CloseIdleConnections()
		if err := get(); (err == nil) != s.ok {
			t.Errorf("%s: GET %s: %v, want success %v", s.name, cfg.Host, err, s.ok)
		}
	}
}
