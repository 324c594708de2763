package graph

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/internal/applytest"
	"github.com/convergo-dev/convergo/reconcile/internal/seam"
)

// Unit tests of the graph walk with the fake client; the integration tests repeat the essentials
// on a real API server.

func hasKey(key string) ReadyCheck {
	return func(live client.Object) (bool, string) {
		if _, ok := live.(*corev1.ConfigMap).Data[key]; ok {
			return true, ""
		}
		return false, "no " + key + " yet"
	}
}

func TestGraphApplyWaitsForDependencies(t *testing.T) {
	c := applytest.NewFake(t, nil)
	a := apply.NewApplier(c, c)
	app := applytest.Owner("app")
	build := func(configData map[string]string) *Graph {
		g := New()
		g.Add("app", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-cm"}}).DependsOn("config")
		g.Add("config", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config"}, Data: configData}).ReadyWhen(hasKey("ready"))
		g.Add("extra", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "extra"}}).DependsOn("app")
		return g
	}

	res, err := build(map[string]string{"x": "1"}).Apply(t.Context(), a, app)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Name      string
		Operation apply.Operation
		Applied   bool
		Ready     bool
		Reason    string
	}
	rows := func(r *Result) []row {
		var out []row
		for _, c := range r.Children {
			out = append(out, row{c.Name, c.Operation, c.Applied, c.Ready, c.Reason})
		}
		return out
	}
	want := []row{
		{"config", apply.OperationCreated, true, false, "no ready yet"},
		{"app", "", false, false, "waiting for config"},
		{"extra", "", false, false, "waiting for app"},
	}
	if diff := cmp.Diff(want, rows(res)); diff != "" {
		t.Errorf("children (-want +got):\n%s", diff)
	}
	wantWaiting := []string{
		"config: no ready yet",
		"app waits for config: no ready yet",
		"extra waits for app: waiting for config",
	}
	if diff := cmp.Diff(wantWaiting, res.Waiting); diff != "" {
		t.Errorf("waiting (-want +got):\n%s", diff)
	}
	if res.Ready {
		t.Error("graph ready while children wait")
	}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "app-cm"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("child with an unready dependency exists (get: %v)", err)
	}

	res, err = build(map[string]string{"ready": "yes"}).Apply(t.Context(), a, app)
	if err != nil {
		t.Fatal(err)
	}
	want = []row{
		{"config", apply.OperationUpdated, true, true, ""},
		{"app", apply.OperationCreated, true, true, ""},
		{"extra", apply.OperationCreated, true, true, ""},
	}
	if diff := cmp.Diff(want, rows(res)); diff != "" {
		t.Errorf("children (-want +got):\n%s", diff)
	}
	if !res.Ready || len(res.Waiting) != 0 || !res.Changed() {
		t.Errorf("Ready=%v Waiting=%v Changed=%v, want ready, nothing waiting, changed", res.Ready, res.Waiting, res.Changed())
	}
	if res.Child("config").Object.(*corev1.ConfigMap).Data["ready"] != "yes" {
		t.Errorf("result object is not the live one: %v", res.Child("config").Object)
	}

	res, err = build(map[string]string{"ready": "yes"}).Apply(t.Context(), a, app)
	if err != nil || res.Changed() || !res.Ready {
		t.Fatalf("third apply: changed=%v ready=%v err=%v; want unchanged and ready", res.Changed(), res.Ready, err)
	}
}

func TestGraphApplyStopsAtError(t *testing.T) {
	other := applytest.Owner("other")
	taken := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}}
	if err := ownership.SetController(other, taken, applytest.Scheme(t)); err != nil {
		t.Fatal(err)
	}
	// a and b depend on nothing, c depends on b. a and b are applied concurrently, and after b's error
	// no further child starts: b's read waits until a is written, so that a has started (else which of
	// the two the scheduler runs first would decide the result).
	aWritten := make(chan struct{})
	var once sync.Once
	c := interceptor.NewClient(applytest.NewFake(t, nil, taken), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if key.Name == "b" {
				select {
				case <-aWritten:
				case <-ctx.Done():
					return fmt.Errorf("child a was never written: %w", ctx.Err())
				}
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			err := c.Patch(ctx, obj, patch, opts...)
			if obj.GetName() == "a" {
				once.Do(func() { close(aWritten) })
			}
			return err
		},
	})
	g := graphOf("a", "b", "c:b")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, err := g.Apply(ctx, apply.NewApplier(c, c), applytest.Owner("app"))
	var owned *ownership.AlreadyOwnedError
	if !errors.As(err, &owned) || !strings.Contains(err.Error(), `child "b"`) {
		t.Fatalf("Apply error = %v, want AlreadyOwnedError naming child b", err)
	}
	type summary struct {
		Name    string
		Op      apply.Operation
		Applied bool
		Reason  string
	}
	var got []summary
	for _, cr := range res.Children {
		got = append(got, summary{cr.Name, cr.Operation, cr.Applied, cr.Reason})
	}
	want := []summary{{"a", apply.OperationCreated, true, ""}, {"b", "", false, "apply failed"}, {"c", "", false, "waiting for b"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "c"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the child depending on the failed one was applied (get: %v)", err)
	}
}

// TestGraphApplyDoesNotWaitForUnrelatedChildren holds the write of "slow" until "dependent" (which
// depends only on "base") has been written: a walk that waited for a whole layer (base and slow)
// before applying dependent would never get there, and the held write fails.
func TestGraphApplyDoesNotWaitForUnrelatedChildren(t *testing.T) {
	dependentSent := make(chan struct{})
	hold := func(ctx context.Context, name string) error {
		switch name {
		case "dependent":
			close(dependentSent)
		case "slow":
			select {
			case <-dependentSent:
			case <-time.After(30 * time.Second):
				return errors.New("dependent was not applied while slow was in flight")
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	c := fake.NewClientBuilder().WithScheme(applytest.Scheme(t)).WithRESTMapper(applytest.Mapper()).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if err := hold(ctx, obj.GetName()); err != nil {
					return err
				}
				return c.Patch(ctx, obj, patch, opts...)
			},
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if err := hold(ctx, obj.GetName()); err != nil {
					return err
				}
				return c.Create(ctx, obj, opts...)
			},
		}).Build()
	res, err := graphOf("base", "slow", "dependent:base").Apply(t.Context(), apply.NewApplier(c, c), applytest.Owner("app"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cr := range res.Children {
		got = append(got, fmt.Sprintf("%s %s", cr.Name, cr.Operation))
	}
	want := []string{"base Created", "slow Created", "dependent Created"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("children in topological order (-want +got):\n%s", diff)
	}
}

// TestGraphApplyLayerConcurrently holds every write until all children of the first layer have sent
// theirs: a walk that applied them one at a time would never get past the first, and the held write
// fails.
func TestGraphApplyLayerConcurrently(t *testing.T) {
	const layer = 3
	var (
		mu      sync.Mutex
		arrived int
		all     = make(chan struct{})
	)
	hold := func(ctx context.Context) error {
		mu.Lock()
		arrived++
		if arrived == layer {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return nil
		case <-time.After(30 * time.Second):
			return errors.New("the other children of the layer were not applied meanwhile")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c := fake.NewClientBuilder().WithScheme(applytest.Scheme(t)).WithRESTMapper(applytest.Mapper()).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if err := hold(ctx); err != nil {
					return err
				}
				return c.Patch(ctx, obj, patch, opts...)
			},
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if err := hold(ctx); err != nil {
					return err
				}
				return c.Create(ctx, obj, opts...)
			},
		}).Build()
	res, err := graphOf("a", "b", "c", "d:a,b,c").Apply(t.Context(), apply.NewApplier(c, c), applytest.Owner("app"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cr := range res.Children {
		got = append(got, fmt.Sprintf("%s %s", cr.Name, cr.Operation))
	}
	want := []string{"a Created", "b Created", "c Created", "d Created"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("children in topological order (-want +got):\n%s", diff)
	}
}

func TestGraphApplyInvalid(t *testing.T) {
	c := applytest.NewFake(t, nil)
	_, err := graphOf("a:b", "b:a").Apply(t.Context(), apply.NewApplier(c, c), applytest.Owner("app"))
	if !errors.Is(err, ErrInvalidGraph) {
		t.Fatalf("Apply = %v, want ErrInvalidGraph", err)
	}
}

// TestGraphDeleteLayers walks a deletion with the fake client: a finalizer holds the first layer,
// so the second is not touched until it is released.
func TestGraphDeleteLayers(t *testing.T) {
	c := applytest.NewFake(t, nil)
	a := apply.NewApplier(c, c)
	app := applytest.Owner("app")
	g := graphOf("config", "app:config", "service:app")
	if _, err := g.Apply(t.Context(), a, app); err != nil {
		t.Fatal(err)
	}
	// Hold "service" (the last layer, deleted first) with a finalizer.
	svc := &corev1.ConfigMap{}
	key := func(n string) client.ObjectKey { return client.ObjectKey{Namespace: "ns", Name: n} }
	if err := c.Get(t.Context(), key("service"), svc); err != nil {
		t.Fatal(err)
	}
	svc.Finalizers = []string{"example.com/hold"}
	if err := c.Update(t.Context(), svc); err != nil {
		t.Fatal(err)
	}
	// Not ours: same kind, another owner's; must survive.
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "foreign", Namespace: "ns"}}
	if err := c.Create(t.Context(), foreign); err != nil {
		t.Fatal(err)
	}

	exists := func(n string) string {
		o := &corev1.ConfigMap{}
		if err := c.Get(t.Context(), key(n), o); err != nil {
			return "gone"
		}
		if o.DeletionTimestamp != nil {
			return "terminating"
		}
		return "present"
	}
	state := func() []string {
		return []string{exists("config"), exists("app"), exists("service")}
	}
	for i := range 2 {
		done, err := deleted(graphOf("config", "app:config", "service:app").Delete(t.Context(), apply.NewApplier(c, c), app))
		if err != nil || done {
			t.Fatalf("delete %d: done=%v err=%v; want not done", i, done, err)
		}
		if diff := cmp.Diff([]string{"present", "present", "terminating"}, state()); diff != "" {
			t.Fatalf("delete %d: state config/app/service (-want +got):\n%s", i, diff)
		}
	}
	if err := c.Get(t.Context(), key("service"), svc); err != nil {
		t.Fatal(err)
	}
	svc.Finalizers = nil
	if err := c.Update(t.Context(), svc); err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for range 5 {
		done, err := deleted(g.Delete(t.Context(), a, app))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, state())
		if done {
			break
		}
	}
	want := [][]string{
		{"present", "gone", "gone"}, // service gone: app deleted (the fake client has no finalizers left)
		{"gone", "gone", "gone"},    // app gone: config deleted
		{"gone", "gone", "gone"},    // done
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deletion steps (-want +got):\n%s", diff)
	}
	if exists("foreign") != "present" {
		t.Error("an object that is not ours was deleted")
	}
}

func TestPruneAndDeleteOwned(t *testing.T) {
	c := applytest.NewFake(t, nil)
	a := apply.NewApplier(c, c)
	app, other := applytest.Owner("app"), applytest.Owner("other")
	if _, err := graphOf("keep", "drop").Apply(t.Context(), a, app); err != nil {
		t.Fatal(err)
	}
	if _, err := graphOf("others").Apply(t.Context(), a, other); err != nil {
		t.Fatal(err)
	}
	untracked := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "untracked", Namespace: "ns"}}
	if err := c.Create(t.Context(), untracked); err != nil {
		t.Fatal(err)
	}

	pruned, err := graphOf("keep").Prune(t.Context(), a, app)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pruned {
		names = append(names, p.GetName())
	}
	if diff := cmp.Diff([]string{"drop"}, names); diff != "" {
		t.Errorf("pruned (-want +got):\n%s", diff)
	}
	list := &corev1.ConfigMapList{}
	if err := c.List(t.Context(), list); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, o := range list.Items {
		left = append(left, o.Name)
	}
	if diff := cmp.Diff([]string{"keep", "others", "untracked"}, left); diff != "" {
		t.Errorf("left after prune (-want +got):\n%s", diff)
	}

	done, err := ownedDeleted(seam.Of(a).DeleteOwned(t.Context(), app, seam.OwnedScope{}, &corev1.ConfigMap{}, &corev1.Secret{}))
	if err != nil || done {
		t.Fatalf("DeleteOwned = %v, %v; want not done on the first call", done, err)
	}
	done, err = ownedDeleted(seam.Of(a).DeleteOwned(t.Context(), app, seam.OwnedScope{}, &corev1.ConfigMap{}, &corev1.Secret{}))
	if err != nil || !done {
		t.Fatalf("DeleteOwned = %v, %v; want done", done, err)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "others"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("another owner's child was deleted: %v", err)
	}
}

// deleteSummary is a DeleteResult in comparable form: the names deleted and what is waited for.
type deleteSummary struct {
	Done    bool
	Deleted []string // "name Kind ns/name"
	Waiting []string
}

func summarizeDelete(t *testing.T, res *DeleteResult) deleteSummary {
	t.Helper()
	s := deleteSummary{Done: res.Done, Waiting: res.Waiting}
	for _, c := range res.Deleted {
		if c.Operation != apply.OperationDeleted || c.Object == nil {
			t.Errorf("deleted child %q: operation %q, object %v", c.Name, c.Operation, c.Object)
			continue
		}
		s.Deleted = append(s.Deleted, strings.TrimSpace(c.Name+" "+c.Object.GetNamespace()+"/"+c.Object.GetName()))
	}
	return s
}

// TestGraphDeleteReports: each pass reports the children whose deletion it issued (each as soon as
// the children that depend on it are gone: "extra", which nothing depends on, goes in the first pass)
// and those it waits for; a child already being deleted is not reported again.
func TestGraphDeleteReports(t *testing.T) {
	c := applytest.NewFake(t, nil)
	a := apply.NewApplier(c, c)
	app := applytest.Owner("app")
	g := graphOf("config", "extra", "app:config", "service:app")
	if _, err := g.Apply(t.Context(), a, app); err != nil {
		t.Fatal(err)
	}
	// Hold "app" with a finalizer so that its pass repeats.
	held := &corev1.ConfigMap{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "app"}, held); err != nil {
		t.Fatal(err)
	}
	held.Finalizers = []string{"example.com/hold"}
	if err := c.Update(t.Context(), held); err != nil {
		t.Fatal(err)
	}
	release := func() {
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "app"}, held); err != nil {
			t.Fatal(err)
		}
		held.Finalizers = nil
		if err := c.Update(t.Context(), held); err != nil {
			t.Fatal(err)
		}
	}
	var got []deleteSummary
	for i := range 6 {
		res, err := g.Delete(t.Context(), a, app)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, summarizeDelete(t, res))
		if res.Done {
			break
		}
		if i == 2 {
			release()
		}
	}
	want := []deleteSummary{
		// A pass waits for what it found, even when it deleted it at once.
		{Deleted: []string{"service ns/service", "extra ns/extra"}, Waiting: []string{"service: ConfigMap ns/service", "extra: ConfigMap ns/extra"}},
		{Deleted: []string{"app ns/app"}, Waiting: []string{"app: ConfigMap ns/app"}},
		{Waiting: []string{"app: ConfigMap ns/app"}}, // terminating: not deleted again
		{Deleted: []string{"config ns/config"}, Waiting: []string{"config: ConfigMap ns/config"}},
		{Done: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deletion passes (-want +got):\n%s", diff)
	}
	if done, err := deleted(g.Delete(t.Context(), a, app)); err != nil || !done {
		t.Errorf("Delete after everything is gone = %v, %v; want done", done, err)
	}
}

func TestDeleteOwnedReports(t *testing.T) {
	c := applytest.NewFake(t, nil)
	a := apply.NewApplier(c, c)
	app, other := applytest.Owner("app"), applytest.Owner("other")
	if _, err := graphOf("a", "b").Apply(t.Context(), a, app); err != nil {
		t.Fatal(err)
	}
	if _, err := graphOf("others").Apply(t.Context(), a, other); err != nil {
		t.Fatal(err)
	}
	var got []deleteSummary
	for range 2 {
		res, err := seam.Of(a).DeleteOwned(t.Context(), app, seam.OwnedScope{}, &corev1.ConfigMap{}, &corev1.Secret{})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, summarizeDelete(t, asDeleteResult(res)))
	}
	want := []deleteSummary{
		// Listed before the deletions: the first call still counts them as existing.
		{Deleted: []string{"ns/a", "ns/b"}, Waiting: []string{"ConfigMap ns/a", "ConfigMap ns/b"}},
		{Done: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DeleteOwned calls (-want +got):\n%s", diff)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "others"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("another owner's child was deleted: %v", err)
	}
}

// deleted reports whether a deletion pass is done.
func deleted(res *DeleteResult, err error) (bool, error) {
	return err == nil && res != nil && res.Done, err
}

// ownedDeleted reports whether a DeleteOwned pass is done.
func ownedDeleted(res *seam.OwnedDeletion, err error) (bool, error) {
	return err == nil && res != nil && res.Done, err
}

// asDeleteResult is res in a graph's DeleteResult form (no graph names).
func asDeleteResult(res *seam.OwnedDeletion) *DeleteResult {
	out := &DeleteResult{Done: res.Done, Waiting: res.Waiting}
	for _, obj := range res.Deleted {
		out.Deleted = append(out.Deleted, ChildResult{Object: obj, Operation: apply.OperationDeleted})
	}
	return out
}

// TestGraphApplyDependsOnForCreation: a creation-only edge holds the child back until it exists, then
// lets its changes through while the dependency is not ready (a rollout), and only the dependency is
// reported in progress; DependsOn holds every change back.
func TestGraphApplyDependsOnForCreation(t *testing.T) {
	type pass struct {
		DepReady  bool
		SvcValue  string
		WantOp    apply.Operation
		WantWaits []string
	}
	tests := map[string]struct {
		creationOnly bool
		passes       []pass
	}{
		"creation only": {creationOnly: true, passes: []pass{
			{DepReady: false, SvcValue: "1", WantOp: "", WantWaits: []string{"deployment: no ready yet", "service waits for deployment: no ready yet"}},
			{DepReady: true, SvcValue: "1", WantOp: apply.OperationCreated},
			{DepReady: false, SvcValue: "2", WantOp: apply.OperationUpdated, WantWaits: []string{"deployment: no ready yet"}},
		}},
		"every change": {creationOnly: false, passes: []pass{
			{DepReady: false, SvcValue: "1", WantOp: "", WantWaits: []string{"deployment: no ready yet", "service waits for deployment: no ready yet"}},
			{DepReady: true, SvcValue: "1", WantOp: apply.OperationCreated},
			{DepReady: false, SvcValue: "2", WantOp: "", WantWaits: []string{"deployment: no ready yet", "service waits for deployment: no ready yet"}},
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := applytest.NewFake(t, nil)
			a := apply.NewApplier(c, c)
			app := applytest.Owner("app")
			for i, p := range tc.passes {
				data := map[string]string{"x": "1"}
				if p.DepReady {
					data = map[string]string{"ready": "yes"}
				}
				g := New()
				g.Add("deployment", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "deployment"}, Data: data}).ReadyWhen(hasKey("ready"))
				svc := g.Add("service", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "service"}, Data: map[string]string{"port": p.SvcValue}})
				if tc.creationOnly {
					svc.DependsOnForCreation("deployment")
				} else {
					svc.DependsOn("deployment")
				}
				res, err := g.Apply(t.Context(), a, app)
				if err != nil {
					t.Fatalf("pass %d: %v", i, err)
				}
				got := pass{DepReady: p.DepReady, SvcValue: p.SvcValue, WantOp: res.Child("service").Operation, WantWaits: res.Waiting}
				if diff := cmp.Diff(p, got); diff != "" {
					t.Errorf("pass %d (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

// TestNodeEdgeKindLastDeclarationWins: declaring an edge again with the other kind replaces it.
func TestNodeEdgeKindLastDeclarationWins(t *testing.T) {
	g := New()
	n := g.Add("s", cm("s")).DependsOnForCreation("d").DependsOn("d")
	m := g.Add("t", cm("t")).DependsOn("d").DependsOnForCreation("d")
	got := []any{n.Dependencies(), n.creationOnly["d"], m.Dependencies(), m.creationOnly["d"]}
	if diff := cmp.Diff([]any{[]string{"d"}, false, []string{"d"}, true}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestDeleteOwnedListsOnlyWhatMayHold: deleteOwned lists (on the cache) only the kinds mayHold names;
// a child of another kind that this Applier wrote is still read and deleted, one it never wrote is
// left to the kinds listed.
func TestDeleteOwnedListsOnlyWhatMayHold(t *testing.T) {
	configMaps := schema.GroupKind{Kind: "ConfigMap"}
	cases := map[string]struct {
		mayHold     func(schema.GroupKind) bool
		wantLists   []string
		wantDeleted []string
	}{
		"every kind (DeleteOwned)": {wantLists: []string{"ConfigMapList", "SecretList"}, wantDeleted: []string{"foreign-left", "keep"}},
		"no kind":                  {mayHold: func(schema.GroupKind) bool { return false }, wantDeleted: []string{"keep"}},
		"configmaps": {mayHold: func(gk schema.GroupKind) bool { return gk == configMaps },
			wantLists: []string{"ConfigMapList"}, wantDeleted: []string{"foreign-left", "keep"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var lists []string
			c := interceptor.NewClient(applytest.NewFake(t, nil), interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					lists = append(lists, reflect.TypeOf(list).Elem().Name())
					return c.List(ctx, list, opts...)
				},
			})
			a := apply.NewApplier(c, c)
			app := applytest.Owner("app")
			if _, err := graphOf("keep").Apply(t.Context(), a, app); err != nil {
				t.Fatal(err)
			}
			left := cm("foreign-left") // tracked by app, written by someone else
			left.Namespace = "ns"
			if err := ownership.Track(app, left, a.Scheme()); err != nil {
				t.Fatal(err)
			}
			if err := c.Create(t.Context(), left); err != nil {
				t.Fatal(err)
			}
			res, err := seam.Of(a).DeleteOwned(t.Context(), app, seam.OwnedScope{MayHold: tc.mayHold}, &corev1.ConfigMap{}, &corev1.Secret{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range res.Deleted {
				got = append(got, d.GetName())
			}
			slices.Sort(got)
			if diff := cmp.Diff(tc.wantDeleted, got); diff != "" {
				t.Errorf("deleted (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLists, lists); diff != "" {
				t.Errorf("lists (-want +got):\n%s", diff)
			}
		})
	}
}
