package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/convergo-dev/convergo/examples/welcome/localweb"
)

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
