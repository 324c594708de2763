package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/convergo-dev/convergo/examples/welcome/localweb"
)

// TestDemo runs the whole demo on a full local cluster (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and one kwok node): the samples converge, the Welcome recovers from its missing Secret,
// both scale up, the Welcome's page is served by a local web server with the configuration the operator
// rendered, follows a rename after the rollout, and both operators delete their children in reverse
// order. Each time the page is served, a subtest TestDemo/Chromium_<name> opens it in headless Chromium
// (`apt-get install -y chromium`), checks that it greets the Welcome's name and keeps a screenshot
// (see openInChromium). It needs every control-plane binary (`make assets`; `make test` builds them
// first) and is skipped with -short.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo starts a full local cluster; skipped with -short")
	}
	var out bytes.Buffer
	opts := options{
		nodes: 1, timeout: 3 * time.Minute, runDir: t.TempDir(),
		servePage: true, pagePort: ptr.To(0), // a free port: other tests may run beside this one
		openPage: func(ctx context.Context, url, name string) error {
			if !t.Run("Chromium "+name, func(t *testing.T) { openInChromium(ctx, t, url, name) }) {
				return fmt.Errorf("the page at %s does not greet %s in Chromium (see the subtest)", url, name)
			}
			return nil
		},
	}
	err := run(t.Context(), &out, opts)
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatalf("demo failed: %v", err)
	}
	for _, want := range []string{
		"Stalled=True (SecretNotFound)",
		`(greets "Hello Alice")`,
		`(greets "Hello Alice Liddell")`,
		"(accepts the password from the Secret, which the demo never prints)",
		"(ConfigMap/alice after Deployment/alice), in order.",
		"memcached-operator: Service/sessions, Deployment/sessions (Deployment/sessions after Service/sessions), in order.",
		"Done: every step went as expected.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output does not contain %q", want)
		}
	}
}

func TestInDependencyOrder(t *testing.T) {
	after := map[string][]string{"Deployment/a": nil, "Service/a": nil, "ConfigMap/a": {"Deployment/a"}}
	cases := map[string]struct {
		got     []string
		want    string
		wantErr bool
	}{
		"in order":                   {got: []string{"Deployment/a", "ConfigMap/a", "Service/a"}, want: "Deployment/a, ConfigMap/a, Service/a (ConfigMap/a after Deployment/a)"},
		"independent child first":    {got: []string{"Service/a", "Deployment/a", "ConfigMap/a"}, want: "Service/a, Deployment/a, ConfigMap/a (ConfigMap/a after Deployment/a)"},
		"dependency before its user": {got: []string{"ConfigMap/a", "Deployment/a", "Service/a"}, wantErr: true},
		"missing one":                {got: []string{"Deployment/a", "ConfigMap/a"}, wantErr: true},
		"something else deleted":     {got: []string{"Deployment/a", "ConfigMap/a", "Service/a", "Secret/a"}, wantErr: true},
		"deleted twice":              {got: []string{"Deployment/a", "Deployment/a", "ConfigMap/a", "Service/a"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := inDependencyOrder(tc.got, after)
			if (err != nil) != tc.wantErr {
				t.Fatalf("inDependencyOrder(%v) error = %v, want error %v", tc.got, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("inDependencyOrder(%v) = %q, want %q", tc.got, got, tc.want)
			}
		})
	}
}

// TestCheckPage checks the demo's own check of the page against servers that get it right and wrong.
func TestCheckPage(t *testing.T) {
	page := func(h1 string) string { return "<!DOCTYPE html><html><body><h1>" + h1 + "</h1></body></html>" }
	cases := map[string]struct {
		name     string
		password string // the container's PASSWORD; none when empty
		hello    string // what /hello/ answers
		private  func(w http.ResponseWriter, r *http.Request)
		wantErr  string
	}{
		"greets the name":  {name: "Alice", hello: page("Hello Alice")},
		"escapes the name": {name: "A & B", hello: page("Hello A &amp; B")},
		"greets someone else": {
			name: "Alice", hello: page("Hello Bob"),
			wantErr: "does not greet Alice",
		},
		"takes the password": {name: "Alice", password: "s3cret", hello: page("Hello Alice"), private: basicAuth("s3cret", "Alice")},
		"private page open to all": {
			name: "Alice", password: "s3cret", hello: page("Hello Alice"),
			private: func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "Welcome back, Alice") },
			wantErr: "answers 200 without the password, want 401",
		},
		"private page refuses the password": {
			name: "Alice", password: "s3cret", hello: page("Hello Alice"), private: basicAuth("other", "Alice"),
			wantErr: "does not take the Secret's password",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc("GET /hello/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, tc.hello) })
			if tc.private != nil {
				mux.HandleFunc("GET /private/", tc.private)
			}
			srv := httptest.NewServer(mux)
			defer srv.Close()
			cfg := &localweb.Config{Env: []localweb.EnvVar{{Name: "NAME", Value: tc.name}}}
			if tc.password != "" {
				cfg.Env = append(cfg.Env, localweb.EnvVar{Name: "PASSWORD", Value: tc.password, Secret: true})
			}
			err := checkPage(t.Context(), &localweb.Process{URL: srv.URL + "/hello/", Config: cfg}, tc.name)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("checkPage: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("checkPage error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// basicAuth returns a private page that accepts password and then welcomes name back.
func basicAuth(password, name string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, p, ok := r.BasicAuth(); !ok || p != password {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "Welcome back, "+name)
	}
}
