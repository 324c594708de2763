package reliability

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/testing/harness"
)

// Seen is one observation of an object by a Recorder.
type Seen struct {
	// Type is Added, Modified or Deleted; objects that existed when recording started are Added.
	Type watch.EventType
	// Kind, Name and UID identify the object.
	Kind, Name string
	UID        types.UID
	// Owner is the UID in the object's Convergo tracking label, if any.
	Owner types.UID
	// Revision is the object's resourceVersion in the event: for Deleted, the revision of the deletion.
	Revision uint64
}

// Recorder watches kinds in one namespace from a moment on and records what happens to the objects,
// with the storage revision of each change. The revisions order changes across kinds (the etcd
// revision behind resourceVersion is global), so a test can tell which of two objects went first
// even when they came through different watches. Watches broken by a fault are resumed from the
// last revision seen, so nothing is missed across an API server restart.
//
// Comparing resourceVersions numerically is not part of the Kubernetes API contract; it holds for the
// etcd-backed API server these tests run and is used only to check ordering in tests.
type Recorder struct {
	mu      sync.Mutex
	seen    []Seen
	present map[string]map[types.UID]Seen // kind -> objects present as last seen
	gaps    []string
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// Record starts recording the kinds of lists (empty typed lists, such as &appsv1.DeploymentList{})
// in namespace ns and stops at cleanup. It returns once every watch has started.
func Record(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme, ns string, lists ...client.ObjectList) *Recorder {
	t.Helper()
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("recorder client: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Recorder{cancel: cancel, present: map[string]map[types.UID]Seen{}}
	t.Cleanup(r.Stop)
	for _, list := range lists {
		gvk, err := apiutil.GVKForObject(list, scheme)
		if err != nil {
			t.Fatalf("recorder: %v", err)
		}
		kind := gvk.Kind[:len(gvk.Kind)-len("List")]
		rv, err := r.list(ctx, c, list, kind, ns)
		if err != nil {
			t.Fatalf("recorder: %v", err)
		}
		r.wg.Add(1)
		go r.watch(ctx, c, list, kind, ns, rv)
	}
	return r
}

// Stop ends the recording; it is safe to call more than once.
func (r *Recorder) Stop() {
	r.cancel()
	r.wg.Wait()
}

// list records the current objects of kind as Added and returns the list's revision. Objects known
// from before that the list lacks were deleted unseen: they are recorded as Deleted at revision 0
// (unknown).
func (r *Recorder) list(ctx context.Context, c client.Client, list client.ObjectList, kind, ns string) (string, error) {
	fresh := list.DeepCopyObject().(client.ObjectList)
	if err := c.List(ctx, fresh, client.InNamespace(ns)); err != nil {
		return "", fmt.Errorf("list %ss: %w", kind, err)
	}
	items, err := meta.ExtractList(fresh)
	if err != nil {
		return "", err
	}
	listed := map[types.UID]bool{}
	for _, item := range items {
		if obj, ok := item.(client.Object); ok {
			listed[obj.GetUID()] = true
			r.add(watch.Added, kind, obj)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid, s := range r.present[kind] {
		if !listed[uid] {
			s.Type, s.Revision = watch.Deleted, 0
			r.seen = append(r.seen, s)
			delete(r.present[kind], uid)
		}
	}
	return fresh.GetResourceVersion(), nil
}

// watch follows kind from revision rv until ctx ends, resuming after broken watches.
func (r *Recorder) watch(ctx context.Context, c client.WithWatch, list client.ObjectList, kind, ns, rv string) {
	defer r.wg.Done()
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(ns),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
		if err != nil {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				rv = r.relist(ctx, c, list, kind, ns, rv)
			}
			select { // the loop ends when ctx does
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		rv = r.follow(ctx, w, c, list, kind, ns, rv)
	}
}

// follow reads events from w until it closes and returns the last revision seen.
func (r *Recorder) follow(ctx context.Context, w watch.Interface, c client.WithWatch, list client.ObjectList, kind, ns, rv string) string {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv
			}
			switch ev.Type {
			case watch.Error:
				if status := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(status) || apierrors.IsGone(status) {
					return r.relist(ctx, c, list, kind, ns, rv)
				}
				return rv
			case watch.Bookmark:
				if obj, err := meta.Accessor(ev.Object); err == nil {
					rv = obj.GetResourceVersion()
				}
			case watch.Added, watch.Modified, watch.Deleted:
				obj, ok := ev.Object.(client.Object)
				if !ok {
					continue
				}
				r.add(ev.Type, kind, obj)
				rv = obj.GetResourceVersion()
			}
		}
	}
}

// relist starts over after the revision to resume from is no longer served (compacted, or older than
// a restarted API server's watch cache). Changes in between are seen only as their end state:
// deletions get revision 0, which ordering checks treat as unknown. The gap is recorded.
func (r *Recorder) relist(ctx context.Context, c client.WithWatch, list client.ObjectList, kind, ns, rv string) string {
	r.mu.Lock()
	r.gaps = append(r.gaps, fmt.Sprintf("%s watch expired at revision %s", kind, rv))
	r.mu.Unlock()
	fresh, err := r.list(ctx, c, list, kind, ns)
	if err != nil {
		return rv
	}
	return fresh
}

func (r *Recorder) add(typ watch.EventType, kind string, obj client.Object) {
	rev, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	s := Seen{
		Type: typ, Kind: kind, Name: obj.GetName(), UID: obj.GetUID(),
		Owner: types.UID(obj.GetLabels()[ownership.OwnerUIDLabel]), Revision: rev,
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, s)
	if r.present[kind] == nil {
		r.present[kind] = map[types.UID]Seen{}
	}
	if typ == watch.Deleted {
		delete(r.present[kind], s.UID)
	} else {
		r.present[kind][s.UID] = s
	}
}

// Seen returns every observation so far, in the order they arrived.
func (r *Recorder) Seen() []Seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// Gaps describes the moments the recording lost changes (a watch that expired); normally empty.
func (r *Recorder) Gaps() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.gaps)
}

// Instances returns, per "Kind/name", how many distinct objects (UIDs) were seen under that name:
// 1 means the object was created once; 2 or more, that it was deleted and created again.
func (r *Recorder) Instances() map[string]int {
	uids := map[string]map[types.UID]bool{}
	for _, s := range r.Seen() {
		key := s.Kind + "/" + s.Name
		if uids[key] == nil {
			uids[key] = map[types.UID]bool{}
		}
		uids[key][s.UID] = true
	}
	out := make(map[string]int, len(uids))
	for k, v := range uids {
		out[k] = len(v)
	}
	return out
}

// DeletionOrderProblems checks, for every object of op that was deleted, that its children were
// deleted before it, and each child after the children op.Children says must go first (e.g. the
// ConfigMap after the Deployment that mounts it; the Service in any order), comparing storage
// revisions. A deletion that fell into a recording gap (revision 0) leaves its order unknown. It
// returns one line per violation.
func (r *Recorder) DeletionOrderProblems(op *Operator) []string {
	seen := r.Seen()
	deleted := map[types.UID]Seen{}                 // owner UID -> its deletion
	childDeleted := map[types.UID]map[string]Seen{} // owner UID -> kind -> deletion
	for _, s := range seen {
		if s.Type != watch.Deleted {
			continue
		}
		if s.Kind == op.Kind {
			deleted[s.UID] = s
			continue
		}
		if s.Owner == "" {
			continue
		}
		if childDeleted[s.Owner] == nil {
			childDeleted[s.Owner] = map[string]Seen{}
		}
		childDeleted[s.Owner][s.Kind] = s
	}
	var problems []string
	for uid, owner := range deleted {
		for _, kind := range op.Children {
			child, ok := childDeleted[uid][kind.Kind]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s %s was deleted but no deletion of its %s was seen", op.Kind, owner.Name, kind.Kind))
				continue
			case child.Revision == 0:
				continue // deleted during a recording gap: the order is unknown
			case owner.Revision != 0 && child.Revision >= owner.Revision:
				problems = append(problems, fmt.Sprintf("%s %s (revision %d) was deleted before its %s %s (revision %d)",
					op.Kind, owner.Name, owner.Revision, kind.Kind, child.Name, child.Revision))
			}
			for _, first := range kind.After {
				if prev, ok := childDeleted[uid][first]; ok && prev.Revision != 0 && child.Revision <= prev.Revision {
					problems = append(problems, fmt.Sprintf("%s of %s %s deleted at revision %d, before %s %s at revision %d",
						kind.Kind, op.Kind, owner.Name, child.Revision, prev.Kind, prev.Name, prev.Revision))
				}
			}
		}
	}
	slices.Sort(problems)
	return problems
}

// Deleted returns the names of objects of kind seen deleted.
func (r *Recorder) Deleted(kind string) []string {
	var out []string
	for _, s := range r.Seen() {
		if s.Type == watch.Deleted && s.Kind == kind {
			out = append(out, s.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// RecordOperator records op's objects and every kind of child they own in namespace ns.
func RecordOperator(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme, op *Operator, ns string) *Recorder {
	t.Helper()
	lists := []client.ObjectList{op.NewList()}
	for _, k := range op.Children {
		lists = append(lists, k.NewList())
	}
	return Record(t, cfg, scheme, ns, lists...)
}

// CheckHistory fails the test if the recording shows a broken guarantee: an object deleted before
// its children or children deleted out of order, or a child (or object) created twice under the same
// name, except the "Kind/name" keys in recreated (children the test deleted itself, which the
// operator must create again). Gaps in the recording are logged. It returns the number of deletions
// of op's objects seen.
func CheckHistory(t testing.TB, r *Recorder, op *Operator, recreated ...string) int {
	t.Helper()
	for _, p := range r.DeletionOrderProblems(op) {
		t.Errorf("deletion order: %s", p)
	}
	for key, n := range r.Instances() {
		if slices.Contains(recreated, key) {
			if n != 2 {
				t.Errorf("%s was created %d times, want 2 (deleted by the test, created again by the operator)", key, n)
			}
			continue
		}
		if n > 1 {
			t.Errorf("%s was created %d times (deleted and created again)", key, n)
		}
	}
	unknown := 0
	for _, s := range r.Seen() {
		if s.Type == watch.Deleted && s.Revision == 0 {
			unknown++
		}
	}
	for _, g := range r.Gaps() {
		t.Logf("recording gap (an API server restart): %s; %d deletions recorded without their revision", g, unknown)
	}
	return len(r.Deleted(op.Kind))
}

// WaitDeleted waits until the recording holds the deletion of every named object of kind (a watch
// event may arrive a little after the API server stopped returning the object).
func (r *Recorder) WaitDeleted(t testing.TB, kind string, names []string, timeout time.Duration) {
	t.Helper()
	harness.Eventually(t, timeout, func() (bool, string) {
		got := r.Deleted(kind)
		var missing []string
		for _, n := range names {
			if !slices.Contains(got, n) {
				missing = append(missing, n)
			}
		}
		return len(missing) == 0, fmt.Sprintf("deletion of %s %v not recorded yet", kind, missing)
	})
}
