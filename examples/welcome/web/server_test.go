package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestServer(t *testing.T) {
	dir := t.TempDir()
	pageFile := filepath.Join(dir, "page.html")
	if err := os.WriteFile(pageFile, []byte("<p>alice@example.com</p>"), 0o444); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		cfg        config
		method     string
		path       string
		password   string // basic auth password when not empty
		wantStatus int
		wantBody   []string // substrings of the body
		notInBody  []string
	}{
		"greets the name": {
			cfg: config{Name: "Alice"}, method: http.MethodGet, path: "/hello/",
			wantStatus: http.StatusOK, wantBody: []string{"<h1>Hello Alice</h1>"},
		},
		"greets below /hello/": {
			cfg: config{Name: "Alice"}, method: http.MethodGet, path: "/hello/there",
			wantStatus: http.StatusOK, wantBody: []string{"Hello Alice"},
		},
		"escapes the name": {
			cfg: config{Name: "<script>x</script>"}, method: http.MethodGet, path: "/hello/",
			wantStatus: http.StatusOK, wantBody: []string{"Hello &lt;script&gt;x&lt;/script&gt;"},
			notInBody: []string{"<script>"},
		},
		"shows the page file": {
			cfg: config{Name: "Alice", PageFile: pageFile}, method: http.MethodGet, path: "/hello/",
			wantStatus: http.StatusOK, wantBody: []string{"Hello Alice", "<p>alice@example.com</p>"},
		},
		"missing page file shows the greeting alone": {
			cfg: config{Name: "Alice", PageFile: filepath.Join(dir, "absent.html")}, method: http.MethodGet, path: "/hello/",
			wantStatus: http.StatusOK, wantBody: []string{"Hello Alice"},
		},
		"page file that is a directory fails": {
			cfg: config{Name: "Alice", PageFile: dir}, method: http.MethodGet, path: "/hello/",
			wantStatus: http.StatusInternalServerError, wantBody: []string{"page unavailable"},
		},
		"health": {
			cfg: config{Name: "Alice"}, method: http.MethodGet, path: "/healthz",
			wantStatus: http.StatusOK, wantBody: []string{"ok"},
		},
		"HEAD works": {
			cfg: config{Name: "Alice"}, method: http.MethodHead, path: "/hello/",
			wantStatus: http.StatusOK,
		},
		"POST is not allowed": {
			cfg: config{Name: "Alice"}, method: http.MethodPost, path: "/hello/",
			wantStatus: http.StatusMethodNotAllowed,
		},
		"unknown path": {
			cfg: config{Name: "Alice"}, method: http.MethodGet, path: "/",
			wantStatus: http.StatusNotFound,
		},
		"private page without a password configured": {
			cfg: config{Name: "Alice"}, method: http.MethodGet, path: "/private/",
			wantStatus: http.StatusNotFound,
		},
		"private page without credentials": {
			cfg: config{Name: "Alice", Password: "s3cret"}, method: http.MethodGet, path: "/private/",
			wantStatus: http.StatusUnauthorized, notInBody: []string{"s3cret"},
		},
		"private page with a wrong password": {
			cfg: config{Name: "Alice", Password: "s3cret"}, method: http.MethodGet, path: "/private/", password: "guess",
			wantStatus: http.StatusUnauthorized, notInBody: []string{"s3cret"},
		},
		"private page with the password": {
			cfg: config{Name: "Alice", Password: "s3cret"}, method: http.MethodGet, path: "/private/", password: "s3cret",
			wantStatus: http.StatusOK, wantBody: []string{"Welcome back, Alice"}, notInBody: []string{"s3cret"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(newServer(tc.cfg, discard()))
			defer srv.Close()
			req, err := http.NewRequestWithContext(t.Context(), tc.method, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.password != "" {
				req.SetBasicAuth("alice", tc.password)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantStatus, resp.StatusCode); diff != "" {
				t.Errorf("status (-want +got):\n%s\nbody: %s", diff, body)
			}
			for _, s := range tc.wantBody {
				if !strings.Contains(string(body), s) {
					t.Errorf("body does not contain %q:\n%s", s, body)
				}
			}
			for _, s := range tc.notInBody {
				if strings.Contains(string(body), s) {
					t.Errorf("body contains %q:\n%s", s, body)
				}
			}
		})
	}
}

func TestConfigFromEnv(t *testing.T) {
	cases := map[string]struct {
		env      map[string]string
		want     config
		wantPort string
		wantErr  string
	}{
		"defaults": {
			env:      map[string]string{"NAME": "Alice"},
			want:     config{Name: "Alice", PageFile: "/etc/welcome/page.html"},
			wantPort: "8088",
		},
		"everything set": {
			env:      map[string]string{"NAME": "Bob", "PORT": "9000", "PAGE_FILE": "/p.html", "PASSWORD": "pw"},
			want:     config{Name: "Bob", PageFile: "/p.html", Password: "pw"},
			wantPort: "9000",
		},
		"missing name":     {env: map[string]string{}, wantErr: "NAME is not set"},
		"port not numeric": {env: map[string]string{"NAME": "A", "PORT": "http"}, wantErr: `PORT "http" is not a TCP port`},
		"port too large":   {env: map[string]string{"NAME": "A", "PORT": "70000"}, wantErr: `PORT "70000" is not a TCP port`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, port, err := configFromEnv(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPort, port); diff != "" {
				t.Errorf("port (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRun starts the real server on a free port of all interfaces, fetches the greeting and stops it.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	env := map[string]string{"NAME": "Alice", "PORT": "0"}
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, func(k string) string { return env[k] }, discard(), ready) }()
	var addr net.Addr
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
	}
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		t.Errorf("listening on %v, want all interfaces", addr)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))+"/hello/", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "Hello Alice") {
		t.Errorf("body = %s, want the greeting", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run after cancel: %v", err)
	}
}
