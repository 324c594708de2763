package fakes

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseWrite(t *testing.T) {
	cases := map[string]struct {
		method, path string
		want         WriteRequest
		wantOK       bool
	}{
		"create":           {method: "POST", path: "/api/v1/namespaces/a/configmaps", wantOK: true, want: WriteRequest{Verb: "create", Resource: "configmaps", Namespace: "a"}},
		"update status":    {method: "PUT", path: "/apis/example.com/v1/namespaces/a/widgets/w/status", wantOK: true, want: WriteRequest{Verb: "update", Group: "example.com", Resource: "widgets", Subresource: "status", Namespace: "a", Name: "w"}},
		"patch cluster":    {method: "PATCH", path: "/apis/rbac.authorization.k8s.io/v1/clusterroles/r", wantOK: true, want: WriteRequest{Verb: "patch", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "r"}},
		"delete":           {method: "DELETE", path: "/api/v1/namespaces/a/secrets/s", wantOK: true, want: WriteRequest{Verb: "delete", Resource: "secrets", Namespace: "a", Name: "s"}},
		"deletecollection": {method: "DELETE", path: "/api/v1/namespaces/a/secrets", wantOK: true, want: WriteRequest{Verb: "deletecollection", Resource: "secrets", Namespace: "a"}},
		"namespace":        {method: "PUT", path: "/api/v1/namespaces/a/finalize", wantOK: true, want: WriteRequest{Verb: "update", Resource: "namespaces", Subresource: "finalize", Name: "a"}},
		"read":             {method: "GET", path: "/api/v1/namespaces/a/configmaps/x", wantOK: false},
		"non-resource":     {method: "POST", path: "/apis", wantOK: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := parseWrite(tc.method, tc.path)
			if ok != tc.wantOK {
				t.Fatalf("parseWrite(%s %s) ok = %v, want %v", tc.method, tc.path, ok, tc.wantOK)
			}
			if !ok {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseWrite(%s %s) (-want +got):\n%s", tc.method, tc.path, diff)
			}
		})
	}
}

func TestInjectorEligibility(t *testing.T) {
	w := func(verb, resource, sub string) WriteRequest {
		return WriteRequest{Verb: verb, Resource: resource, Subresource: sub}
	}
	cases := map[string]struct {
		opts []InjectOption
		req  WriteRequest
		want bool
	}{
		"create by default":          {req: w("create", "pods", ""), want: true},
		"delete not by default":      {req: w("delete", "pods", ""), want: false},
		"delete when asked":          {opts: []InjectOption{WithInjectDeletes()}, req: w("delete", "pods", ""), want: true},
		"resource listed":            {opts: []InjectOption{WithInjectResources("pods")}, req: w("update", "pods", ""), want: true},
		"resource not listed":        {opts: []InjectOption{WithInjectResources("pods")}, req: w("update", "secrets", ""), want: false},
		"subresource not implied":    {opts: []InjectOption{WithInjectResources("pods")}, req: w("update", "pods", "status"), want: false},
		"subresource listed":         {opts: []InjectOption{WithInjectResources("pods/status")}, req: w("update", "pods", "status"), want: true},
		"subresource excludes main":  {opts: []InjectOption{WithInjectResources("pods/status")}, req: w("update", "pods", ""), want: false},
		"wildcard subresources":      {opts: []InjectOption{WithInjectResources("pods/*")}, req: w("patch", "pods", "status"), want: true},
		"wildcard includes the main": {opts: []InjectOption{WithInjectResources("pods/*")}, req: w("patch", "pods", ""), want: true},
		"match func": {
			opts: []InjectOption{WithInjectWhen(func(r WriteRequest) bool { return r.Verb == "patch" })},
			req:  w("update", "pods", ""), want: false,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := NewInjector(tc.opts...).eligible(tc.req); got != tc.want {
				t.Errorf("eligible(%+v) = %v, want %v", tc.req, got, tc.want)
			}
		})
	}
}
