package reconcile

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/convergo-dev/convergo/internal/jsonstrip"
)

func TestDropsManagedFields(t *testing.T) {
	lean := func() toolscache.TransformFunc {
		var o cache.Options
		LeanCache(&o)
		return o.DefaultTransform
	}
	slimChild := func() toolscache.TransformFunc {
		var o cache.Options
		SlimCache(&o, &corev1.ConfigMap{})
		for _, e := range o.ByObject {
			return e.Transform
		}
		return nil
	}
	cases := map[string]struct {
		t    toolscache.TransformFunc
		want bool
	}{
		"none":                              {t: nil, want: false},
		"LeanCache's":                       {t: lean(), want: true},
		"SlimCache's, which reads them":     {t: slimChild(), want: false},
		"controller-runtime's":              {t: cache.TransformStripManagedFields(), want: false},
		"one that returns what it is given": {t: func(in any) (any, error) { return in, nil }, want: false},
		"one that fails":                    {t: func(any) (any, error) { return droppedManagedFields{}, errors.New("no") }, want: false},
		"one that panics":                   {t: func(in any) (any, error) { return in.(*corev1.Pod), nil }, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, dropsManagedFields(tc.t)); diff != "" {
				t.Errorf("dropsManagedFields() (-want +got):\n%s", diff)
			}
		})
	}
}

// shapeLW records the jsonstrip.Shape in the context of each list and watch.
type shapeLW struct{ shapes []any }

func (l *shapeLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *shapeLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

func (l *shapeLW) ListWithContext(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
	l.shapes = append(l.shapes, ctx.Value(stripShapeKey{}))
	return &corev1.ConfigMapList{}, nil
}

func (l *shapeLW) WatchWithContext(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	l.shapes = append(l.shapes, ctx.Value(stripShapeKey{}))
	return watch.NewEmptyWatch(), nil
}

// TestLeanWireInformerMarksRequests: an informer's requests carry the shape to strip once its
// transform is LeanCache's, and not with another transform.
func TestLeanWireInformerMarksRequests(t *testing.T) {
	var lean cache.Options
	LeanCache(&lean)
	cases := map[string]struct {
		transform toolscache.TransformFunc
		want      []any
	}{
		"LeanCache's transform": {transform: lean.DefaultTransform, want: []any{jsonstrip.List, jsonstrip.Events}},
		"another transform":     {transform: cache.TransformStripManagedFields(), want: []any{nil, nil}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var seen toolscache.ListerWatcher
			next := func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
				seen = lw
				return toolscache.NewSharedIndexInformer(lw, obj, resync, idx)
			}
			rec := &shapeLW{}
			inf := leanWireInformers(next, nil)(rec, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
			if err := inf.SetTransform(tc.transform); err != nil {
				t.Fatal(err)
			}
			lw := toolscache.ToListerWatcherWithContext(seen)
			if _, err := lw.ListWithContext(t.Context(), metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := lw.WatchWithContext(t.Context(), metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, rec.shapes); diff != "" {
				t.Errorf("shapes in the requests' contexts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStripTransport(t *testing.T) {
	const (
		event    = `{"type":"ADDED","object":{"metadata":{"name":"a","managedFields":[{"manager":"m"}]}}}` + "\n"
		stripped = `{"type":"ADDED","object":{"metadata":{"name":"a"}}}` + "\n"
	)
	cases := map[string]struct {
		shape       any  // in the request's context; nil: none
		handoff     bool // a watchHandoff in the request's context
		timeout     time.Duration
		contentType string
		encoding    string
		status      int
		want        string // what the caller reads
		wantHanded  string // what the handoff holds
	}{
		"handed off JSON":            {handoff: true, contentType: "application/json", status: 200, wantHanded: event},
		"handed off, marked":         {handoff: true, shape: jsonstrip.Events, contentType: "application/json", status: 200, wantHanded: event},
		"handoff of protobuf":        {handoff: true, contentType: "application/vnd.kubernetes.protobuf", status: 200, want: event},
		"handoff of an error":        {handoff: true, contentType: "application/json", status: 410, want: event},
		"handoff, still compressed":  {handoff: true, contentType: "application/json", encoding: "identity", status: 200, want: event},
		"handoff, a client timeout":  {handoff: true, timeout: time.Minute, contentType: "application/json", status: 200, want: event},
		"marked JSON":                {shape: jsonstrip.Events, contentType: "application/json", status: 200, want: stripped},
		"marked JSON with a charset": {shape: jsonstrip.Events, contentType: "application/json; charset=utf-8", status: 200, want: stripped},
		"not marked":                 {contentType: "application/json", status: 200, want: event},
		"protobuf":                   {shape: jsonstrip.Events, contentType: "application/vnd.kubernetes.protobuf", status: 200, want: event},
		"still compressed":           {shape: jsonstrip.Events, contentType: "application/json", encoding: "identity", status: 200, want: event},
		"an error":                   {shape: jsonstrip.Events, contentType: "application/json", status: 410, want: event},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				if tc.encoding != "" {
					w.Header().Set("Content-Encoding", tc.encoding)
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, event)
			}))
			defer srv.Close()
			client := srv.Client()
			client.Timeout = tc.timeout
			hc := leanWireClient(client, false)
			ctx := t.Context()
			if tc.shape != nil {
				ctx = context.WithValue(ctx, stripShapeKey{}, tc.shape)
			}
			handoff := &watchHandoff{}
			if tc.handoff {
				ctx = context.WithValue(ctx, watchHandoffKey{}, handoff)
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			var handed []byte
			if body := handoff.take(); body != nil {
				defer body.Close()
				if handed, err = io.ReadAll(body); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tc.wantHanded, string(handed)); diff != "" {
				t.Errorf("handed off (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStripTransportAcceptEncoding checks what the cache's requests ask for: no gzip unless
// WithCompression, an encoding the caller chose kept, and the caller's request left as it was.
func TestStripTransportAcceptEncoding(t *testing.T) {
	cases := map[string]struct {
		compressed bool
		asked      string // the caller's Accept-Encoding
		want       string // what reaches the server
	}{
		"default":                      {want: "identity"},
		"with compression":             {compressed: true, want: "gzip"},
		"caller's choice":              {asked: "br", want: "br"},
		"caller's choice, compression": {compressed: true, asked: "br", want: "br"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r.Header.Get("Accept-Encoding")
				w.WriteHeader(http.StatusOK)
			}))
			defer srv.Close()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.asked != "" {
				req.Header.Set("Accept-Encoding", tc.asked)
			}
			resp, err := leanWireClient(srv.Client(), tc.compressed).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Accept-Encoding at the server (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.asked, req.Header.Get("Accept-Encoding")); diff != "" {
				t.Errorf("the caller's request changed (-want +got):\n%s", diff)
			}
		})
	}
}
