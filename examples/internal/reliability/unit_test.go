package reliability

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	memcachedv1 "github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	"github.com/convergo-dev/convergo/ownership"
)

// converged returns a Memcached named name that Audit accepts, and its two children.
func converged(name string, gen int64) (*memcachedv1.Memcached, []client.Object) {
	uid := types.UID("uid-" + name)
	mc := &memcachedv1.Memcached{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid, Generation: gen, Finalizers: []string{Memcached.Finalizer}},
		Status: memcachedv1.MemcachedStatus{ObservedGeneration: gen, Conditions: []metav1.Condition{
			{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Reconciled", ObservedGeneration: gen},
			{Type: ForeignCondition, Status: metav1.ConditionTrue, Reason: "Audited", ObservedGeneration: gen},
		}},
	}
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Namespace: "ns", Name: name,
			Labels: map[string]string{
				"app.kubernetes.io/managed-by": Memcached.Controller,
				ownership.OwnerUIDLabel:        string(uid),
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "cache.convergo.dev/v1alpha1", Kind: "Memcached", Name: name, UID: uid, Controller: ptr.To(true)}},
		}
	}
	return mc, []client.Object{&appsv1.Deployment{ObjectMeta: meta()}, &corev1.Service{ObjectMeta: meta()}}
}

func TestAudit(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, SchemeAdders...) {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]struct {
		mutate  func(mc *memcachedv1.Memcached, children []client.Object) []client.Object
		deleted []string
		want    []string // substrings of the problems, in order
	}{
		"all good": {},
		"not ready": {
			mutate: func(mc *memcachedv1.Memcached, ch []client.Object) []client.Object {
				mc.Status.Conditions[0].Status = metav1.ConditionFalse
				return ch
			},
			want: []string{"is not Ready", "(children of the memcached a that is not Ready: Service a (generation 0"},
		},
		"ready for an older generation": {
			mutate: func(mc *memcachedv1.Memcached, ch []client.Object) []client.Object {
				mc.Generation = 3
				mc.Status.ObservedGeneration = 3
				return ch
			},
			want: []string{"Ready for generation 2, but its generation is 3", "observedGeneration 0, replicas 0/1 ready"},
		},
		"stalled and ready": {
			mutate: func(mc *memcachedv1.Memcached, ch []client.Object) []client.Object {
				mc.Status.Conditions = append(mc.Status.Conditions, metav1.Condition{Type: "Stalled", Status: metav1.ConditionTrue, Reason: "X"})
				return ch
			},
			want: []string{"has Stalled=True"},
		},
		"lost condition": {
			mutate: func(mc *memcachedv1.Memcached, ch []client.Object) []client.Object {
				mc.Status.Conditions = mc.Status.Conditions[:1]
				return ch
			},
			want: []string{"lost condition " + ForeignCondition},
		},
		"finalizer twice": {
			mutate: func(mc *memcachedv1.Memcached, ch []client.Object) []client.Object {
				mc.Finalizers = append(mc.Finalizers, Memcached.Finalizer)
				return ch
			},
			want: []string{"2 times"},
		},
		"leaked finalizer: asked to be deleted, still there": {
			deleted: []string{"a"},
			want:    []string{"asked to be deleted but still exists"},
		},
		"orphaned child": {
			mutate: func(mc *memcachedv1.Memcached, ch []client.Object) []client.Object {
				orphan := ch[1].DeepCopyObject().(client.Object)
				orphan.SetName("left-behind")
				orphan.SetLabels(map[string]string{ownership.OwnerUIDLabel: "gone"})
				orphan.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "cache.convergo.dev/v1alpha1", Kind: "Memcached", Name: "gone", UID: "gone"}})
				return append(ch, orphan)
			},
			want: []string{"orphaned Service left-behind"},
		},
		"missing child": {
			mutate: func(mc *memcachedv1.Memcached, ch []client.Object) []client.Object { return ch[:1] },
			want:   []string{"has 0 Services, want 1"},
		},
		"child of another owner kind is ignored": {
			mutate: func(mc *memcachedv1.Memcached, ch []client.Object) []client.Object {
				other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "welcome-svc",
					Labels:          map[string]string{ownership.OwnerUIDLabel: "w"},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "welcome.convergo.dev/v1alpha1", Kind: "Welcome", Name: "w", UID: "w"}}}}
				return append(ch, other)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mc, children := converged("a", 2)
			if tc.mutate != nil {
				children = tc.mutate(mc, children)
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(children, mc)...).Build()
			rep, err := Audit(t.Context(), c, Expectation{Operator: Memcached, Namespace: "ns", Deleted: tc.deleted, Kept: []string{ForeignCondition}})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Problems) != len(tc.want) {
				t.Fatalf("problems:\n%s\nwant %d containing %q", rep, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(rep.Problems[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, rep.Problems[i], w)
				}
			}
		})
	}
}

func TestDeletionOrderProblems(t *testing.T) {
	del := func(kind, name string, owner types.UID, rev uint64) Seen {
		return Seen{Type: watch.Deleted, Kind: kind, Name: name, UID: types.UID(kind + "-" + name), Owner: owner, Revision: rev}
	}
	welcome := func(rev uint64) Seen { s := del("Welcome", "w", "", rev); s.UID = "w"; return s }
	cases := map[string]struct {
		seen []Seen
		want []string
	}{
		"in order": {
			seen: []Seen{del("Deployment", "w", "w", 10), del("Service", "w", "w", 12), del("ConfigMap", "w", "w", 13), welcome(15)},
		},
		"independent child in any order": {
			seen: []Seen{del("Service", "w", "w", 9), del("Deployment", "w", "w", 10), del("ConfigMap", "w", "w", 12), welcome(15)},
		},
		"owner before a child": {
			seen: []Seen{del("Deployment", "w", "w", 10), del("Service", "w", "w", 12), welcome(13), del("ConfigMap", "w", "w", 14)},
			want: []string{"Welcome w (revision 13) was deleted before its ConfigMap w (revision 14)"},
		},
		"dependency before the child that uses it": {
			seen: []Seen{del("ConfigMap", "w", "w", 9), del("Deployment", "w", "w", 10), del("Service", "w", "w", 12), welcome(15)},
			want: []string{"ConfigMap of Welcome w deleted at revision 9, before Deployment w at revision 10"},
		},
		"child deletion never seen": {
			seen: []Seen{del("Deployment", "w", "w", 10), del("Service", "w", "w", 12), welcome(15)},
			want: []string{"Welcome w was deleted but no deletion of its ConfigMap was seen"},
		},
		"unknown revision after a gap is not judged": {
			seen: []Seen{del("Deployment", "w", "w", 0), del("Service", "w", "w", 12), del("ConfigMap", "w", "w", 13), welcome(15)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &Recorder{seen: tc.seen}
			if diff := cmp.Diff(tc.want, r.DeletionOrderProblems(Welcome)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKillSwitch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			w.(http.Flusher).Flush()
			<-r.Context().Done() // a watch: open until the client goes away
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	k := NewKillSwitch()
	cfg := k.Wrap(&rest.Config{Host: srv.URL})
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: rt}
	get := func(ctx context.Context, path string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		return hc.Do(req)
	}
	resp, err := get(t.Context(), "/ok")
	if err != nil {
		t.Fatalf("before Cut: %v", err)
	}
	resp.Body.Close()
	stream, err := get(t.Context(), "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	readDone := make(chan error, 1)
	go func() { _, err := io.ReadAll(stream.Body); readDone <- err }()

	k.Cut()
	select {
	case <-readDone:
	case <-time.After(time.Minute):
		t.Fatal("an open stream survived Cut")
	}
	if _, err := get(t.Context(), "/ok"); !errors.Is(err, ErrKilled) {
		t.Errorf("request after Cut: error = %v, want ErrKilled", err)
	}
}

func TestEventDropper(t *testing.T) {
	events := []string{
		`{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"1"}}}`,
		`{"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"2"}}}`,
		`{"type":"MODIFIED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"3"}}}`,
		`{"type":"DELETED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"4"}}}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, e := range events {
			fmt.Fprintln(w, e)
		}
	}))
	defer srv.Close()
	cases := map[string]struct {
		dropping bool
		watch    bool
		want     []string
		dropped  int64
	}{
		"passing":             {watch: true, want: events},
		"dropping":            {dropping: true, watch: true, want: events[1:2], dropped: 3},
		"not a watch: intact": {dropping: true, want: events},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := &EventDropper{}
			d.SetDropping(tc.dropping)
			rt, err := rest.TransportFor(d.Wrap(&rest.Config{Host: srv.URL}))
			if err != nil {
				t.Fatal(err)
			}
			url := srv.URL + "/api/v1/configmaps"
			if tc.watch {
				url += "?watch=true"
			}
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
			resp, err := (&http.Client{Transport: rt}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			got := slices.DeleteFunc(strings.Split(string(body), "\n"), func(s string) bool { return s == "" })
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events through the dropper (-want +got):\n%s", diff)
			}
			if d.Dropped() != tc.dropped {
				t.Errorf("Dropped() = %d, want %d", d.Dropped(), tc.dropped)
			}
		})
	}
}
