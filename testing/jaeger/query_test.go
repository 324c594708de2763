package jaeger

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// apiAnswer is an answer of Jaeger's /api/traces as Jaeger v2 gives it (trimmed): spans out of
// order, a CHILD_OF reference, tags of several types.
const apiAnswer = `{"data":[{"traceID":"t1","spans":[
 {"traceID":"t1","spanID":"c2","operationName":"apply derived","references":[{"refType":"CHILD_OF","traceID":"t1","spanID":"r"}],
  "startTime":1000300,"duration":100,"tags":[{"key":"convergo.operation","type":"string","value":"Created"}],"processID":"p1"},
 {"traceID":"t1","spanID":"r","operationName":"widgets","references":[],
  "startTime":1000000,"duration":1000,"tags":[{"key":"convergo.trigger","type":"string","value":"created"},{"key":"k8s.object.generation","type":"int64","value":1}],"processID":"p1"},
 {"traceID":"t1","spanID":"c1","operationName":"apply config","references":[{"refType":"CHILD_OF","traceID":"t1","spanID":"r"}],
  "startTime":1000100,"duration":150,"tags":[{"key":"convergo.ready","type":"bool","value":true}],"processID":"p1"}
 ],"processes":{"p1":{"serviceName":"widget-operator","tags":[]}}}]}`

func TestTraces(t *testing.T) {
	var query string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		query = r.URL.Path + "?" + r.URL.RawQuery
		_, _ = w.Write([]byte(apiAnswer))
	}))
	defer srv.Close()
	s := &Server{httpPort: srv.Listener.Addr().(*net.TCPAddr).Port}
	traces, err := s.Traces(t.Context(), "widget-operator")
	if err != nil {
		t.Fatal(err)
	}
	if want := "/api/traces?limit=1000&lookback=1h&service=widget-operator"; query != want {
		t.Errorf("query %q, want %q", query, want)
	}
	if len(traces) != 1 {
		t.Fatalf("%d traces, want 1", len(traces))
	}
	tr := traces[0]
	type span struct{ Name, Parent, Service string }
	var got []span
	for _, s := range tr.Spans {
		got = append(got, span{s.Name, s.ParentID, s.Service})
	}
	want := []span{{"widgets", "", "widget-operator"}, {"apply config", "r", "widget-operator"}, {"apply derived", "r", "widget-operator"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spans by start time (-want +got):\n%s", diff)
	}
	if got, want := tr.Spans[1].End(), time.UnixMicro(1000250); !got.Equal(want) {
		t.Errorf("apply config ends at %v, want %v", got, want)
	}
	wantTree := "widgets (1ms) convergo.trigger=created k8s.object.generation=1\n" +
		"  apply config (150µs) convergo.ready=true\n" +
		"  apply derived (100µs) convergo.operation=Created\n"
	if diff := cmp.Diff(wantTree, tr.Tree()); diff != "" {
		t.Errorf("Tree (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("widgets (1ms) convergo.trigger=created\n  apply config (150µs)\n  apply derived (100µs)\n", tr.Tree("convergo.trigger")); diff != "" {
		t.Errorf("Tree(convergo.trigger) (-want +got):\n%s", diff)
	}
}

func TestTracesError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "storage unavailable", http.StatusInternalServerError)
	}))
	defer srv.Close()
	s := &Server{httpPort: srv.Listener.Addr().(*net.TCPAddr).Port}
	_, err := s.Traces(t.Context(), "x")
	if err == nil || !strings.Contains(err.Error(), "500 Internal Server Error: storage unavailable") {
		t.Errorf("error %v, want one naming the status and the answer", err)
	}
}

func TestConfigYAML(t *testing.T) {
	got := configYAML(4318, 16686, 16685)
	for _, want := range []string{
		"endpoint: 127.0.0.1:4318", "endpoint: 127.0.0.1:16686", "endpoint: 127.0.0.1:16685",
		"level: none", // no telemetry port of jaeger's own
	} {
		if !strings.Contains(got, want) {
			t.Errorf("configuration lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "0.0.0.0") {
		t.Errorf("configuration listens beyond loopback:\n%s", got)
	}
}
