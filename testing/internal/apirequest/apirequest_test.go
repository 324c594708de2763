package apirequest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The harness (TestParseRequest) and fakes (TestParseWrite) tests cover the path rules in depth; these
// cases pin what the two rely on here.
func TestParse(t *testing.T) {
	cases := map[string]struct {
		method, path string
		watch        bool
		want         Info
		wantOK       bool
	}{
		"status patch": {
			method: "PATCH", path: "/apis/apps/v1/namespaces/ns/deployments/web/status", wantOK: true,
			want: Info{Verb: "patch", Group: "apps", Version: "v1", Resource: "deployments", Subresource: "status", Namespace: "ns", Name: "web"},
		},
		"head is a get": {
			method: "HEAD", path: "/api/v1/namespaces/ns/configmaps/c", wantOK: true,
			want: Info{Verb: "get", Version: "v1", Resource: "configmaps", Namespace: "ns", Name: "c"},
		},
		"watch by query": {
			method: "GET", path: "/api/v1/pods", watch: true, wantOK: true,
			want: Info{Verb: "watch", Version: "v1", Resource: "pods"},
		},
		"namespace finalize": {
			method: "PUT", path: "/api/v1/namespaces/ns/finalize", wantOK: true,
			want: Info{Verb: "update", Version: "v1", Resource: "namespaces", Subresource: "finalize", Name: "ns"},
		},
		"bare watch prefix": {method: "GET", path: "/api/v1/watch", want: Info{Verb: "get", Version: "v1"}},
		"discovery":         {method: "GET", path: "/apis/apps/v1", want: Info{Verb: "get"}},
		"health":            {method: "GET", path: "/readyz", want: Info{Verb: "get"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := Parse(tc.method, tc.path, tc.watch)
			if ok != tc.wantOK {
				t.Errorf("Parse(%s %s) ok = %v, want %v", tc.method, tc.path, ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%s %s) (-want +got):\n%s", tc.method, tc.path, diff)
			}
		})
	}
}

func TestMatchResource(t *testing.T) {
	cases := map[string]struct {
		resource, subresource, pattern string
		want                           bool
	}{
		"empty pattern matches all":      {resource: "pods", subresource: "status", pattern: "", want: true},
		"resource itself":                {resource: "pods", pattern: "pods", want: true},
		"resource excludes subresources": {resource: "pods", subresource: "status", pattern: "pods", want: false},
		"subresource":                    {resource: "pods", subresource: "status", pattern: "pods/status", want: true},
		"subresource excludes resource":  {resource: "pods", pattern: "pods/status", want: false},
		"wildcard, subresource":          {resource: "pods", subresource: "eviction", pattern: "pods/*", want: true},
		"wildcard, resource":             {resource: "pods", pattern: "pods/*", want: true},
		"other resource":                 {resource: "secrets", pattern: "pods/*", want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := MatchResource(tc.resource, tc.subresource, tc.pattern); got != tc.want {
				t.Errorf("MatchResource(%q, %q, %q) = %v, want %v", tc.resource, tc.subresource, tc.pattern, got, tc.want)
			}
		})
	}
}
