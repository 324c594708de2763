package finalizer

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

const ours = "convergo.dev/test"

// patchLog records the JSON patches a fake client receives.
type patchLog struct{ patches []string }

func (l *patchLog) client(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	return fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
				data, err := p.Data(obj)
				if err != nil {
					return err
				}
				l.patches = append(l.patches, string(data))
				err = c.Patch(ctx, obj, p, opts...)
				if err != nil && apierrors.ReasonForError(err) == metav1.StatusReasonUnknown {
					// The fake client reports a failed JSON patch as a plain error; the API server
					// answers 422 (measured in the integration tests).
					err = apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "patch", schema.GroupResource{}, "", err.Error(), 0, false)
				}
				return err
			},
		}).Build()
}

func configMap(finalizers ...string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", Finalizers: finalizers}}
}

func TestEnsure(t *testing.T) {
	cases := map[string]struct {
		server, local  []string // finalizers stored, and in the caller's (possibly stale) copy
		wantAdded      bool
		wantFinalizers []string
		wantPatches    []string
	}{
		"absent list: test null, add list": {
			wantAdded:      true,
			wantFinalizers: []string{ours},
			wantPatches: []string{
				`[{"op":"test","path":"/metadata/finalizers","value":null},{"op":"add","path":"/metadata/finalizers","value":["convergo.dev/test"]}]`,
			},
		},
		"other finalizers: test list, append": {
			server: []string{"a.io/x"}, local: []string{"a.io/x"},
			wantAdded:      true,
			wantFinalizers: []string{"a.io/x", ours},
			wantPatches: []string{
				`[{"op":"test","path":"/metadata/finalizers","value":["a.io/x"]},{"op":"add","path":"/metadata/finalizers/-","value":"convergo.dev/test"}]`,
			},
		},
		"present: no request": {
			server: []string{ours}, local: []string{ours},
			wantFinalizers: []string{ours},
		},
		"stale copy without ours, server has it: re-read, no duplicate": {
			server: []string{"a.io/x", ours}, local: []string{"a.io/x"},
			wantFinalizers: []string{"a.io/x", ours},
			wantPatches: []string{
				`[{"op":"test","path":"/metadata/finalizers","value":["a.io/x"]},{"op":"add","path":"/metadata/finalizers/-","value":"convergo.dev/test"}]`,
			},
		},
		"stale copy, another finalizer added meanwhile: retried on the fresh list": {
			server: []string{"b.io/y"}, local: nil,
			wantAdded:      true,
			wantFinalizers: []string{"b.io/y", ours},
			wantPatches: []string{
				`[{"op":"test","path":"/metadata/finalizers","value":null},{"op":"add","path":"/metadata/finalizers","value":["convergo.dev/test"]}]`,
				`[{"op":"test","path":"/metadata/finalizers","value":["b.io/y"]},{"op":"add","path":"/metadata/finalizers/-","value":"convergo.dev/test"}]`,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			log := &patchLog{}
			c := log.client(t, configMap(tc.server...))
			obj := configMap(tc.local...)
			added, err := Ensure(t.Context(), c, obj, ours)
			if err != nil {
				t.Fatal(err)
			}
			if added != tc.wantAdded {
				t.Errorf("added = %v, want %v", added, tc.wantAdded)
			}
			if diff := cmp.Diff(tc.wantPatches, log.patches); diff != "" {
				t.Errorf("patches (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFinalizers, obj.Finalizers); diff != "" {
				t.Errorf("obj finalizers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	cases := map[string]struct {
		server, local  []string
		wantRemoved    bool
		wantFinalizers []string
		wantPatches    []string
	}{
		"only ours is touched": {
			server: []string{"a.io/x", ours, "b.io/y"}, local: []string{"a.io/x", ours, "b.io/y"},
			wantRemoved:    true,
			wantFinalizers: []string{"a.io/x", "b.io/y"},
			wantPatches: []string{
				`[{"op":"test","path":"/metadata/finalizers/1","value":"convergo.dev/test"},{"op":"remove","path":"/metadata/finalizers/1"}]`,
			},
		},
		"duplicates are all removed, highest index first": {
			server: []string{ours, "a.io/x", ours}, local: []string{ours, "a.io/x", ours},
			wantRemoved:    true,
			wantFinalizers: []string{"a.io/x"},
			wantPatches: []string{
				`[{"op":"test","path":"/metadata/finalizers/2","value":"convergo.dev/test"},{"op":"remove","path":"/metadata/finalizers/2"},` +
					`{"op":"test","path":"/metadata/finalizers/0","value":"convergo.dev/test"},{"op":"remove","path":"/metadata/finalizers/0"}]`,
			},
		},
		"absent: no request": {
			server: []string{"a.io/x"}, local: []string{"a.io/x"},
			wantFinalizers: []string{"a.io/x"},
		},
		"list moved meanwhile: retried at the fresh index": {
			server: []string{ours}, local: []string{"a.io/x", ours},
			wantRemoved: true,
			wantPatches: []string{
				`[{"op":"test","path":"/metadata/finalizers/1","value":"convergo.dev/test"},{"op":"remove","path":"/metadata/finalizers/1"}]`,
				`[{"op":"test","path":"/metadata/finalizers/0","value":"convergo.dev/test"},{"op":"remove","path":"/metadata/finalizers/0"}]`,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			log := &patchLog{}
			c := log.client(t, configMap(tc.server...))
			obj := configMap(tc.local...)
			removed, err := Remove(t.Context(), c, obj, ours)
			if err != nil {
				t.Fatal(err)
			}
			if removed != tc.wantRemoved {
				t.Errorf("removed = %v, want %v", removed, tc.wantRemoved)
			}
			if diff := cmp.Diff(tc.wantPatches, log.patches); diff != "" {
				t.Errorf("patches (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFinalizers, obj.Finalizers); diff != "" {
				t.Errorf("obj finalizers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnsureRejectsBeforeAnyRequest(t *testing.T) {
	deleting := configMap("a.io/x")
	deleting.DeletionTimestamp = &metav1.Time{}
	cases := map[string]struct {
		obj  *corev1.ConfigMap
		name string
		want string
	}{
		"invalid name":     {obj: configMap(), name: "not a name/", want: "invalid finalizer name"},
		"being deleted":    {obj: deleting, name: ours, want: "being deleted"},
		"too many slashes": {obj: configMap(), name: "a/b/c", want: "invalid finalizer name"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			log := &patchLog{}
			c := log.client(t)
			_, err := Ensure(t.Context(), c, tc.obj, tc.name)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
			if len(log.patches) != 0 {
				t.Errorf("sent %d patches", len(log.patches))
			}
		})
	}
}

func TestFinalize(t *testing.T) {
	boom := errors.New("boom")
	cases := map[string]struct {
		finalizers     []string
		cleanupDone    bool
		cleanupErr     error
		nilCleanup     bool
		wantDone       bool
		wantErr        error
		wantCalls      int
		wantFinalizers []string
	}{
		"cleanup done: finalizer removed": {
			finalizers: []string{"a.io/x", ours}, cleanupDone: true,
			wantDone: true, wantCalls: 1, wantFinalizers: []string{"a.io/x"},
		},
		"cleanup not done: finalizer kept": {
			finalizers: []string{ours}, wantCalls: 1, wantFinalizers: []string{ours},
		},
		"cleanup failed: finalizer kept, error returned": {
			finalizers: []string{ours}, cleanupErr: boom,
			wantErr: boom, wantCalls: 1, wantFinalizers: []string{ours},
		},
		"already finalized: cleanup not run again": {
			finalizers: []string{"a.io/x"}, cleanupDone: true,
			wantDone: true, wantFinalizers: []string{"a.io/x"},
		},
		"nil cleanup counts as done": {
			finalizers: []string{ours}, nilCleanup: true,
			wantDone: true, wantFinalizers: nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			log := &patchLog{}
			c := log.client(t, configMap(tc.finalizers...))
			obj := configMap(tc.finalizers...)
			calls := 0
			cleanup := func(context.Context) (bool, error) {
				calls++
				return tc.cleanupDone, tc.cleanupErr
			}
			if tc.nilCleanup {
				cleanup = nil
			}
			done, err := Finalize(t.Context(), c, obj, ours, cleanup)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if done != tc.wantDone || calls != tc.wantCalls {
				t.Errorf("done = %v after %d cleanup calls; want %v after %d", done, calls, tc.wantDone, tc.wantCalls)
			}
			if diff := cmp.Diff(tc.wantFinalizers, obj.Finalizers); diff != "" {
				t.Errorf("finalizers (-want +got):\n%s", diff)
			}
		})
	}
}

// staleReader always answers with the copy it was given, like a cache that has not caught up.
type staleReader struct {
	client.Reader
	stale *corev1.ConfigMap
	gets  int
}

func (r *staleReader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.gets++
	r.stale.DeepCopyInto(obj.(*corev1.ConfigMap))
	return nil
}

// TestRetryRereadsThroughWithAPIReader shows where a retry re-reads: through the call's client by default
// (here a cache stuck on the old list, so the retries are refused until they give up), through the
// WithAPIReader reader when given (here the API server itself, so the second attempt succeeds).
func TestRetryRereadsThroughWithAPIReader(t *testing.T) {
	cases := map[string]struct {
		withReader  bool
		wantErr     bool
		wantStale   int // re-reads answered by the stale cache
		wantPatches int
	}{
		"default: re-read through the cached client":    {withReader: false, wantErr: true, wantStale: maxAttempts - 1, wantPatches: maxAttempts},
		"WithAPIReader: re-read through the API reader": {withReader: true, wantErr: false, wantStale: 0, wantPatches: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var log patchLog
			server := log.client(t, configMap("other.io/a", "other.io/b"))
			cache := &staleReader{stale: configMap("other.io/a")}
			var opts []Option
			cached := cachedClient{Client: server, reader: cache}
			if tc.withReader {
				opts = append(opts, WithAPIReader(server))
			}
			obj := configMap("other.io/a") // what the cache showed when the reconcile began
			_, err := Ensure(t.Context(), cached, obj, ours, opts...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Ensure error = %v, want error %v", err, tc.wantErr)
			}
			got := struct{ Stale, Patches int }{cache.gets, len(log.patches)}
			want := struct{ Stale, Patches int }{tc.wantStale, tc.wantPatches}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("re-reads and patches (-want +got):\n%s", diff)
			}
			if !tc.wantErr {
				if diff := cmp.Diff([]string{"other.io/a", "other.io/b", ours}, obj.GetFinalizers()); diff != "" {
					t.Errorf("finalizers (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// cachedClient writes through Client and reads through reader, like a manager's client.
type cachedClient struct {
	client.Client
	reader client.Reader
}

func (c cachedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.reader.Get(ctx, key, obj, opts...)
}
