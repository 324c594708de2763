package harness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

func TestParseRequest(t *testing.T) {
	cases := map[string]struct {
		method, path, watch string
		want                Request
	}{
		"create namespaced core": {
			method: "POST", path: "/api/v1/namespaces/ns1/configmaps",
			want: Request{Verb: "create", APIVersion: "v1", Resource: "configmaps", Namespace: "ns1"},
		},
		"get namespaced group": {
			method: "GET", path: "/apis/apps/v1/namespaces/ns1/deployments/web",
			want: Request{Verb: "get", APIGroup: "apps", APIVersion: "v1", Resource: "deployments", Namespace: "ns1", Name: "web"},
		},
		"list all namespaces": {
			method: "GET", path: "/apis/apps/v1/deployments",
			want: Request{Verb: "list", APIGroup: "apps", APIVersion: "v1", Resource: "deployments"},
		},
		"watch by query": {
			method: "GET", path: "/api/v1/namespaces/ns1/pods", watch: "true",
			want: Request{Verb: "watch", APIVersion: "v1", Resource: "pods", Namespace: "ns1"},
		},
		"watch by deprecated path": {
			method: "GET", path: "/api/v1/watch/namespaces/ns1/pods",
			want: Request{Verb: "watch", APIVersion: "v1", Resource: "pods", Namespace: "ns1"},
		},
		"status update": {
			method: "PUT", path: "/apis/example.com/v1/namespaces/ns1/widgets/w/status",
			want: Request{Verb: "update", APIGroup: "example.com", APIVersion: "v1", Resource: "widgets", Subresource: "status", Namespace: "ns1", Name: "w"},
		},
		"patch": {
			method: "PATCH", path: "/api/v1/namespaces/ns1/services/s",
			want: Request{Verb: "patch", APIVersion: "v1", Resource: "services", Namespace: "ns1", Name: "s"},
		},
		"delete": {
			method: "DELETE", path: "/api/v1/namespaces/ns1/secrets/x",
			want: Request{Verb: "delete", APIVersion: "v1", Resource: "secrets", Namespace: "ns1", Name: "x"},
		},
		"deletecollection": {
			method: "DELETE", path: "/api/v1/namespaces/ns1/secrets",
			want: Request{Verb: "deletecollection", APIVersion: "v1", Resource: "secrets", Namespace: "ns1"},
		},
		"cluster-scoped get": {
			method: "GET", path: "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin",
			want: Request{Verb: "get", APIGroup: "rbac.authorization.k8s.io", APIVersion: "v1", Resource: "clusterroles", Name: "admin"},
		},
		"namespace object": {
			method: "GET", path: "/api/v1/namespaces/ns1",
			want: Request{Verb: "get", APIVersion: "v1", Resource: "namespaces", Name: "ns1"},
		},
		"namespace status": {
			method: "PUT", path: "/api/v1/namespaces/ns1/finalize",
			want: Request{Verb: "update", APIVersion: "v1", Resource: "namespaces", Subresource: "finalize", Name: "ns1"},
		},
		"list namespaces": {
			method: "GET", path: "/api/v1/namespaces",
			want: Request{Verb: "list", APIVersion: "v1", Resource: "namespaces"},
		},
		"eviction create": {
			method: "POST", path: "/api/v1/namespaces/ns1/pods/p/eviction",
			want: Request{Verb: "create", APIVersion: "v1", Resource: "pods", Subresource: "eviction", Namespace: "ns1", Name: "p"},
		},
		"discovery": {
			method: "GET", path: "/apis/apps/v1",
			want: Request{Verb: "get", Path: "/apis/apps/v1"},
		},
		"version": {
			method: "GET", path: "/version",
			want: Request{Verb: "get", Path: "/version"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ParseRequest(tc.method, tc.path, tc.watch)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseRequest(%s %s) (-want +got):\n%s", tc.method, tc.path, diff)
			}
		})
	}
}

func TestRequestsHelpers(t *testing.T) {
	rs := Requests{
		{Verb: "create", Resource: "configmaps", Namespace: "a"},
		{Verb: "get", Resource: "configmaps", Namespace: "a", Name: "x"},
		{Verb: "patch", Resource: "deployments", Namespace: "a", Name: "d"},
		{Verb: "patch", Resource: "deployments", Subresource: "status", Namespace: "b", Name: "d"},
		{Verb: "watch", Resource: "pods"},
		{Verb: "get", Path: "/version"},
	}
	counts := map[string]struct {
		verb, resource string
		want           int
	}{
		"any":                     {want: 6},
		"verb only":               {verb: "patch", want: 2},
		"resource without status": {verb: "patch", resource: "deployments", want: 1},
		"subresource":             {verb: "patch", resource: "deployments/status", want: 1},
		"resource and any sub":    {resource: "deployments/*", want: 2},
		"get any resource":        {verb: "get", want: 2},
		"no match":                {verb: "delete", resource: "configmaps", want: 0},
	}
	for name, tc := range counts {
		t.Run(name, func(t *testing.T) {
			if got := rs.Count(tc.verb, tc.resource); got != tc.want {
				t.Errorf("Count(%q, %q) = %d, want %d", tc.verb, tc.resource, got, tc.want)
			}
		})
	}
	if got := rs.Writes(); got != 3 {
		t.Errorf("Writes() = %d, want 3", got)
	}
	if diff := cmp.Diff(map[string]int{"create": 1, "get": 2, "patch": 2, "watch": 1}, rs.ByVerb()); diff != "" {
		t.Errorf("ByVerb (-want +got):\n%s", diff)
	}
	if got := len(rs.InNamespace("a")); got != 3 {
		t.Errorf("InNamespace(a) has %d requests, want 3", got)
	}
	want := strings.Join([]string{
		"VERB    RESOURCE            COUNT",
		"get     /version            1",
		"create  configmaps          1",
		"get     configmaps          1",
		"patch   deployments         1",
		"patch   deployments/status  1",
		"watch   pods                1",
		"total                       6",
		"",
	}, "\n")
	if diff := cmp.Diff(want, rs.String()); diff != "" {
		t.Errorf("String (-want +got):\n%s", diff)
	}
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestRequestTime checks that each recorded request carries the time it was sent, on the monotonic
// clock: after what happened before the client sent it and before the server saw it, whatever the
// answer took.
func TestRequestTime(t *testing.T) {
	cases := map[string]struct {
		status int
		err    error
	}{
		"answered":            {status: http.StatusOK},
		"refused":             {status: http.StatusConflict},
		"failed without code": {err: errors.New("connection refused")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewRequestCounter()
			var arrived time.Time
			rt := &countingTransport{counter: c, next: roundTripFunc(func(*http.Request) (*http.Response, error) {
				arrived = time.Now()
				if tc.err != nil {
					return nil, tc.err
				}
				return &http.Response{StatusCode: tc.status, Body: http.NoBody}, nil
			})}
			before := time.Now()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "https://api.test/api/v1/namespaces/a/configmaps", http.NoBody)
			if err != nil {
				t.Fatal(err)
			}
			if resp, err := rt.RoundTrip(req); err == nil {
				resp.Body.Close()
			}
			after := time.Now()

			got := c.Snapshot()
			if len(got) != 1 {
				t.Fatalf("recorded %d requests, want 1: %v", len(got), got)
			}
			r := got[0]
			want := Request{Verb: "create", APIVersion: "v1", Resource: "configmaps", Namespace: "a", StatusCode: tc.status}
			if diff := cmp.Diff(want, r, cmpopts.IgnoreFields(Request{}, "Time")); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
			if r.Time.Before(before) || r.Time.After(arrived) || r.Time.After(after) {
				t.Errorf("Time = %v; want it between %v (before sending) and %v (when the server saw it)", r.Time, before, arrived)
			}
			if !strings.Contains(r.Time.String(), " m=") {
				t.Errorf("Time = %v has no monotonic clock reading", r.Time)
			}
		})
	}
}

func TestRequestCounterConcurrent(t *testing.T) {
	c := NewRequestCounter()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				c.record(Request{Verb: "get", Resource: "pods"})
			}
		})
	}
	wg.Wait()
	if got := c.Snapshot().Count("get", "pods"); got != 800 {
		t.Errorf("recorded %d requests, want 800", got)
	}
	snap := c.Snapshot()
	c.Reset()
	if len(snap) != 800 || len(c.Snapshot()) != 0 {
		t.Errorf("Reset changed a snapshot or kept requests: snapshot %d, after reset %d", len(snap), len(c.Snapshot()))
	}
}

func TestNamespacePrefix(t *testing.T) {
	cases := map[string]struct {
		in, want string
	}{
		"simple":      {in: "TestFoo", want: "test-testfoo-"},
		"subtest":     {in: "TestFoo/with_space and CAPS", want: "test-testfoo-with-space-and-caps-"},
		"symbols":     {in: "Test__x//y", want: "test-test-x-y-"},
		"empty":       {in: "", want: "test-"},
		"only junk":   {in: "///", want: "test-"},
		"long":        {in: "Test" + strings.Repeat("a", 100), want: "test-test" + strings.Repeat("a", 46) + "-"},
		"cut at dash": {in: "Test" + strings.Repeat("a", 45) + "/b", want: "test-test" + strings.Repeat("a", 45) + "-"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := namespacePrefix(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("namespacePrefix(%q) (-want +got):\n%s", tc.in, diff)
			}
			if len(got)+5 > 63 {
				t.Errorf("namespacePrefix(%q) = %q leaves no room for the random suffix", tc.in, got)
			}
		})
	}
}

// recordingTB records Fatalf instead of stopping the goroutine.
type recordingTB struct {
	testing.TB
	ctx    context.Context
	fatals []string
}

func (r *recordingTB) Helper()                  {}
func (r *recordingTB) Context() context.Context { return r.ctx }
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.fatals = append(r.fatals, fmt.Sprintf(format, args...))
}

func TestEventuallyReportsLastState(t *testing.T) {
	rec := &recordingTB{TB: t, ctx: t.Context()}
	calls := 0
	Eventually(rec, 300*time.Millisecond, func() (bool, string) {
		calls++
		return false, fmt.Sprintf("state %d", calls)
	})
	if len(rec.fatals) != 1 {
		t.Fatalf("Fatalf called %d times, want 1", len(rec.fatals))
	}
	if want := fmt.Sprintf("state %d", calls); !strings.HasSuffix(rec.fatals[0], want) {
		t.Errorf("failure %q does not end with the last state %q", rec.fatals[0], want)
	}
	if calls < 2 {
		t.Errorf("check ran %d times, want it polled", calls)
	}
}

func TestEventuallySucceeds(t *testing.T) {
	rec := &recordingTB{TB: t, ctx: t.Context()}
	calls := 0
	Eventually(rec, time.Minute, func() (bool, string) {
		calls++
		return calls == 3, "not yet"
	})
	if len(rec.fatals) != 0 {
		t.Errorf("Fatalf called: %v", rec.fatals)
	}
	if calls != 3 {
		t.Errorf("check ran %d times, want 3", calls)
	}
}

func TestDefaultPanicsWithoutMain(t *testing.T) {
	defaultMu.Lock()
	saved := defaultEnv
	defaultEnv = nil
	defaultMu.Unlock()
	t.Cleanup(func() {
		defaultMu.Lock()
		defaultEnv = saved
		defaultMu.Unlock()
	})
	defer func() {
		r := recover()
		if msg, _ := r.(string); !strings.Contains(msg, "harness.Main") {
			t.Errorf("Default panicked with %v, want a message pointing to harness.Main", r)
		}
	}()
	Default()
}

func TestBuildProgressStaysQuietUntilABuild(t *testing.T) {
	cases := map[string]struct {
		lines []string
		want  string
	}{
		"cache hit is silent": {
			lines: []string{"convergo-assets: using kube-apiserver, etcd from cache /c\n"},
			want:  "",
		},
		"a build is shown from its first line": {
			lines: []string{
				"convergo-assets: using etcd from cache /c\n",
				"convergo-assets: building kube-apiserver v1.37.0 into /c\n",
				"convergo-assets:   go: downloading k8s.io/kubernetes v1.37.0\n",
			},
			want: "convergo-assets: building kube-apiserver v1.37.0 into /c\nconvergo-assets:   go: downloading k8s.io/kubernetes v1.37.0\n",
		},
		"a wait is shown": {
			lines: []string{"convergo-assets: waiting for /c/.lock (another process is checking or building)\n"},
			want:  "convergo-assets: waiting for /c/.lock (another process is checking or building)\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out strings.Builder
			p := &buildProgress{w: &out}
			for _, l := range tc.lines {
				if _, err := p.Write([]byte(l)); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("forwarded (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWebhookOptions(t *testing.T) {
	tests := map[string]struct {
		env  *Env
		want webhook.Options
	}{
		"without webhooks the server stays off": {env: &Env{}, want: webhook.Options{Port: -1}},
		"with webhooks the server serves where the configurations point": {
			env:  &Env{Webhooks: &envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1", LocalServingPort: 40443, LocalServingCertDir: "/tmp/certs"}},
			want: webhook.Options{Host: "127.0.0.1", Port: 40443, CertDir: "/tmp/certs"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.env.WebhookOptions(), cmpopts.IgnoreFields(webhook.Options{}, "TLSOpts", "WebhookMux")); diff != "" {
				t.Errorf("WebhookOptions() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWebhookInstallOptions(t *testing.T) {
	var none config
	if diff := cmp.Diff(envtest.WebhookInstallOptions{}, none.webhookInstallOptions()); diff != "" {
		t.Errorf("without WithWebhooks (-want +got):\n%s", diff)
	}
	var cfg config
	WithWebhooks("config/webhook")(&cfg)
	want := envtest.WebhookInstallOptions{Paths: []string{"config/webhook"}, LocalServingHost: "127.0.0.1", MaxTime: crdEstablishTimeout, PollInterval: PollInterval}
	if diff := cmp.Diff(want, cfg.webhookInstallOptions()); diff != "" {
		t.Errorf("with WithWebhooks (-want +got):\n%s", diff)
	}
}
