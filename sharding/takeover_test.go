package sharding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

const ownerLabel = "convergo.dev/owner-uid"

var (
	secretGVK    = corev1.SchemeGroupVersion.WithKind("Secret")
	configMapGVK = corev1.SchemeGroupVersion.WithKind("ConfigMap")
)

// takeOverFixture is a shard of member a whose objects (Secrets, for the fakes) moved to it from b,
// with their children (ConfigMaps) on a fake API server.
type takeOverFixture struct {
	s       *Shard
	lists   func() int               // LISTs of children sent
	patches func() map[string]int    // patches sent, by "Kind name"
	labels  func() map[string]string // each child's shard label, as the writes left it
}

// newTakeOverFixture returns a's shard with owners moved to it (each with children labelled b, one
// already labelled a, and one without label), plus one owner that stays b's, with its child.
func newTakeOverFixture(t *testing.T, owners int) (*takeOverFixture, []*metav1.PartialObjectMetadata) {
	t.Helper()
	s, _ := newTestShard(t, "a")
	key := Label("welcome")
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	metaScheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(metaScheme); err != nil {
		t.Fatal(err)
	}
	var typed []client.Object
	var metas []runtime.Object
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	child := func(name, owner, member string) {
		l := map[string]string{ownerLabel: owner}
		if member != "" {
			l[key] = member
		}
		om := metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: l}
		typed = append(typed, &corev1.ConfigMap{ObjectMeta: om})
		metas = append(metas, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: *om.DeepCopy()})
	}
	var moved []*metav1.PartialObjectMetadata
	for i := range owners {
		uid := fmt.Sprintf("owner-%03d", i)
		o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid),
			Labels: map[string]string{key: "a"}, Annotations: map[string]string{MovedFromAnnotation: "b"}}}
		o.SetGroupVersionKind(secretGVK)
		moved = append(moved, o)
		if err := store.Add(o); err != nil {
			t.Fatal(err)
		}
		typed = append(typed, &corev1.Secret{ObjectMeta: *o.ObjectMeta.DeepCopy()})
		child(uid+"-page", uid, "b")
		child(uid+"-deploy", uid, "b")
		child(uid+"-done", uid, "a")  // relabelled already
		child(uid+"-legacy", uid, "") // from before sharding
	}
	child("theirs-page", "theirs", "b") // its owner stays b's: a must not touch it
	var mu sync.Mutex
	patches := map[string]int{}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(typed...).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			mu.Lock()
			patches[obj.GetObjectKind().GroupVersionKind().Kind+" "+obj.GetName()]++
			mu.Unlock()
			return c.Patch(ctx, obj, patch, opts...)
		},
	}).Build()
	mc := metadatafake.NewSimpleMetadataClient(metaScheme, metas...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(configMapGVK, meta.RESTScopeNamespace)
	mapper.Add(secretGVK, meta.RESTScopeNamespace)
	s.writer, s.cache, s.scheme, s.meta, s.mapper, s.gvk = s.Client(c), c, scheme, mc, mapper, secretGVK
	s.mu.Lock()
	s.store = store
	s.mu.Unlock()
	f := &takeOverFixture{
		s: s,
		lists: func() int {
			return len(slices.DeleteFunc(mc.Actions(), func(a clienttesting.Action) bool { return a.GetVerb() != "list" }))
		},
		patches: func() map[string]int {
			mu.Lock()
			defer mu.Unlock()
			out := map[string]int{}
			for k, v := range patches {
				out[k] = v
			}
			return out
		},
		labels: func() map[string]string {
			var cms corev1.ConfigMapList
			if err := c.List(context.Background(), &cms); err != nil {
				t.Fatal(err)
			}
			out := map[string]string{}
			for _, cm := range cms.Items {
				out[cm.Name] = cm.Labels[key]
			}
			return out
		},
	}
	return f, moved
}

// TestTakeChildrenInRounds: the objects that moved to a member have their children listed per round
// (one LIST per kind for up to 100 objects), not per object; each child not carrying the member's
// label is relabelled once, whichever reconcile asks first; each object loses its mark once; the
// children of an object that did not move here are left alone.
func TestTakeChildrenInRounds(t *testing.T) {
	tests := []struct {
		name      string
		owners    int
		wantLists int
	}{
		{"one object", 1, 1},
		{"a few objects at once", 12, 1},
		{"more objects than one LIST names", 150, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, moved := newTakeOverFixture(t, tc.owners)
			ctx := t.Context()
			taken := make([][]string, len(moved))
			errs := make([]error, len(moved))
			var wg sync.WaitGroup
			sem := make(chan struct{}, 8) // the Reconciler's workers
			for i, o := range moved {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer func() { <-sem; wg.Done() }()
					kids, err := f.s.TakeChildren(ctx, o.DeepCopy(), ownerLabel, []schema.GroupVersionKind{configMapGVK})
					errs[i] = err
					for _, k := range kids {
						taken[i] = append(taken[i], k.GetObjectKind().GroupVersionKind().Kind+" "+k.GetName())
					}
					slices.Sort(taken[i])
				}()
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			if got := f.lists(); got != tc.wantLists {
				t.Errorf("%d LISTs of children for %d objects, want %d", got, tc.owners, tc.wantLists)
			}
			wantPatches, wantLabels := map[string]int{}, map[string]string{"theirs-page": "b"}
			for i, o := range moved {
				n := o.Name
				wantPatches["Secret "+n] = 1 // the mark cleared
				for _, c := range []string{n + "-page", n + "-deploy", n + "-legacy"} {
					wantPatches["ConfigMap "+c] = 1
				}
				for _, c := range []string{n + "-page", n + "-deploy", n + "-done", n + "-legacy"} {
					wantLabels[c] = "a"
				}
				want := []string{"ConfigMap " + n + "-deploy", "ConfigMap " + n + "-legacy", "ConfigMap " + n + "-page"}
				if diff := cmp.Diff(want, taken[i]); diff != "" {
					t.Errorf("children %s took (-want +got):\n%s", n, diff)
				}
			}
			if diff := cmp.Diff(wantPatches, f.patches()); diff != "" {
				t.Errorf("patches (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantLabels, f.labels()); diff != "" {
				t.Errorf("children's shard labels (-want +got):\n%s", diff)
			}
			f.s.mu.Lock()
			left := len(f.s.takes)
			f.s.mu.Unlock()
			if left != 0 {
				t.Errorf("%d take-over jobs left after every object took its children", left)
			}
		})
	}
}

// TestTakeChildrenRetriesAFailedRound: a round that could not list the children fails the objects
// it held; the next call takes them in a new round.
func TestTakeChildrenRetriesAFailedRound(t *testing.T) {
	f, moved := newTakeOverFixture(t, 2)
	mc := f.s.meta.(*metadatafake.FakeMetadataClient)
	fail := true
	mc.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		if fail {
			fail = false
			return true, nil, apierrors.NewServiceUnavailable("etcd is slow")
		}
		return false, nil, nil
	})
	kinds := []schema.GroupVersionKind{configMapGVK}
	if _, err := f.s.TakeChildren(t.Context(), moved[0].DeepCopy(), ownerLabel, kinds); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("first TakeChildren: %v, want the LIST's error", err)
	}
	for _, o := range moved {
		kids, err := f.s.TakeChildren(t.Context(), o.DeepCopy(), ownerLabel, kinds)
		if err != nil {
			t.Fatalf("TakeChildren of %s after the failed round: %v", o.Name, err)
		}
		if len(kids) != 3 {
			t.Errorf("%s took %d children, want 3", o.Name, len(kids))
		}
	}
	if got := f.lists(); got != 2 {
		t.Errorf("%d LISTs, want 2 (the failed round and the next)", got)
	}
}

// TestHandOverConflict: a hand-over whose patch conflicts (the object changed since the Reconciler's
// version) stops the reconcile with no error, is logged at V(1) only, and is tried again through the
// shard's queue; an object deleted meanwhile stops it quietly; any other error is returned.
func TestHandOverConflict(t *testing.T) {
	ab := []string{"a", "b"}
	uid := firstOwnedBy(t, ab, "b")
	gr := schema.GroupResource{Resource: "secrets"}
	tests := []struct {
		name      string
		patchErr  error
		wantStop  bool
		wantErr   bool
		wantRetry bool
		wantMoved bool
	}{
		{"moved", nil, true, false, false, true},
		{"conflict", apierrors.NewConflict(gr, uid, errors.New("the object has been modified")), true, false, true, false},
		{"deleted meanwhile", apierrors.NewNotFound(gr, uid), true, false, false, false},
		{"forbidden", apierrors.NewForbidden(gr, uid, errors.New("no")), false, true, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestShard(t, "a", "b")
			logs, log := NewLogRecorder()
			s.log = log
			s.gvk = secretGVK
			s.writer = s.Client(fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
				Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
					return tc.patchErr
				},
			}).Build())
			obj := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", UID: types.UID(uid), ResourceVersion: "7",
				Labels: map[string]string{Label("welcome"): "a"}}}
			stop, err := s.HandOver(t.Context(), obj)
			if stop != tc.wantStop || (err != nil) != tc.wantErr {
				t.Errorf("HandOver = %v, %v; want stop %v, error %v", stop, err, tc.wantStop, tc.wantErr)
			}
			if got := s.Stale(obj); got != tc.wantMoved {
				t.Errorf("Stale after the hand-over = %v, want %v", got, tc.wantMoved)
			}
			retried := false
			deadline := time.Now().Add(time.Minute)
			for tc.wantRetry && !retried && time.Now().Before(deadline) {
				retried = s.queue.Len() == 1
				time.Sleep(time.Millisecond)
			}
			if !tc.wantRetry {
				time.Sleep(3 * handOverRetryBase)
				retried = s.queue.Len() != 0
			}
			if retried != tc.wantRetry {
				t.Errorf("hand-over queued again: %v, want %v", retried, tc.wantRetry)
			}
			for _, e := range logs.Entries() {
				if e.Error {
					t.Errorf("logged at the error level: %s", e)
				}
			}
		})
	}
}
