package graph

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/convergo-dev/convergo/internal/marks"
	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/internal/applytest"
	"github.com/convergo-dev/convergo/reconcile/internal/seam"
)

// TestNodeDeletionChoices: the Node methods record the choice as the object's annotation (last call
// wins, a shared annotations map untouched), and Validate refuses what deletion cannot honour.
func TestNodeDeletionChoices(t *testing.T) {
	cases := map[string]struct {
		set     func(n *Node)
		anns    map[string]string
		want    map[string]string
		wantErr string
	}{
		"default": {set: func(*Node) {}},
		"keep": {set: func(n *Node) { n.KeepOnDelete() },
			want: map[string]string{apply.DeletionPolicyAnnotation: "keep"}},
		"foreground": {set: func(n *Node) { n.DeletionPropagation(metav1.DeletePropagationForeground) },
			want: map[string]string{apply.DeletionPolicyAnnotation: "foreground"}},
		"background after keep": {set: func(n *Node) { n.KeepOnDelete().DeletionPropagation(metav1.DeletePropagationBackground) }},
		"keep after foreground, other annotations kept": {
			set:  func(n *Node) { n.DeletionPropagation(metav1.DeletePropagationForeground).KeepOnDelete() },
			anns: map[string]string{"note": "x"},
			want: map[string]string{"note": "x", apply.DeletionPolicyAnnotation: "keep"}},
		"orphan is refused": {set: func(n *Node) { n.DeletionPropagation(metav1.DeletePropagationOrphan) },
			want:    map[string]string{apply.DeletionPolicyAnnotation: "Orphan"},
			wantErr: `invalid child graph: child "data": deletion propagation Orphan is not supported (it would leave the child's own dependents without owner); use KeepOnDelete to keep the child itself`},
		"unknown annotation value is refused": {set: func(*Node) {},
			anns:    map[string]string{apply.DeletionPolicyAnnotation: "Keep"},
			want:    map[string]string{apply.DeletionPolicyAnnotation: "Keep"},
			wantErr: `invalid child graph: child "data": convergo.dev/deletion-policy="Keep" is none of "keep", "foreground", "background"`},
		"explicit background annotation": {set: func(*Node) {},
			anns: map[string]string{apply.DeletionPolicyAnnotation: "background"},
			want: map[string]string{apply.DeletionPolicyAnnotation: "background"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			shared := map[string]string{}
			for k, v := range tc.anns {
				shared[k] = v
			}
			before := map[string]string{}
			for k, v := range shared {
				before[k] = v
			}
			obj := cm("data")
			if tc.anns != nil {
				obj.Annotations = shared
			}
			g := New()
			tc.set(g.Add("data", obj))
			if diff := cmp.Diff(tc.want, obj.GetAnnotations()); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, shared); diff != "" {
				t.Errorf("the caller's annotations map changed (-want +got):\n%s", diff)
			}
			err := g.Validate()
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
				if !errors.Is(err, ErrInvalidGraph) {
					t.Errorf("error %v does not wrap ErrInvalidGraph", err)
				}
			}
			if gotErr != tc.wantErr {
				t.Errorf("Validate = %q, want %q", gotErr, tc.wantErr)
			}
		})
	}
}

// deletionLog records the propagation of every DELETE and the name of every PATCH the fake client
// receives, and counts the writes.
type deletionLog struct {
	mu      sync.Mutex
	deletes map[string]metav1.DeletionPropagation
	patches []string
	writes  applytest.WriteCounter
}

func (l *deletionLog) client(t *testing.T) client.WithWatch {
	t.Helper()
	l.deletes = map[string]metav1.DeletionPropagation{}
	funcs := l.writes.Funcs()
	patch, del := funcs.Patch, funcs.Delete
	funcs.Patch = func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
		l.mu.Lock()
		l.patches = append(l.patches, obj.GetName())
		l.mu.Unlock()
		err := patch(ctx, c, obj, p, opts...)
		if _, isStatus := err.(apierrors.APIStatus); err != nil && !isStatus {
			// A JSON patch that does not apply (a failed test): the API server answers 422 (see
			// apiserver's jsonPatcher.applyJSPatch), the fake client a plain error.
			err = apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "patch", schema.GroupResource{}, "", err.Error(), 0, false)
		}
		return err
	}
	funcs.Delete = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		o := &client.DeleteOptions{}
		o.ApplyOptions(opts)
		l.mu.Lock()
		l.deletes[obj.GetName()] = ptr.Deref(o.PropagationPolicy, "")
		l.mu.Unlock()
		return del(ctx, c, obj, opts...)
	}
	return fake.NewClientBuilder().WithScheme(applytest.Scheme(t)).WithRESTMapper(applytest.Mapper()).WithInterceptorFuncs(funcs).Build()
}

func (l *deletionLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deletes, l.patches = map[string]metav1.DeletionPropagation{}, nil
	l.writes = applytest.WriteCounter{}
}

// childState describes a ConfigMap child for the comparisons: "gone", or whether the owner controls it
// and tracks it.
func childState(t *testing.T, c client.Client, name string, app client.Object) string {
	t.Helper()
	o := &corev1.ConfigMap{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: name}, o); err != nil {
		return "gone"
	}
	switch {
	case ownership.IsControlledBy(o, app) && ownership.IsTrackedBy(o, app):
		return "controlled+tracked"
	case ownership.IsControlledBy(o, app):
		return "controlled"
	case ownership.IsTrackedBy(o, app):
		return "tracked"
	case len(o.OwnerReferences) > 0 || o.Labels[ownership.OwnerUIDLabel] != "" || o.Annotations[marks.OwnerName] != "":
		return "partly released"
	}
	return "released"
}

// TestGraphDeleteHonoursDeletionChoices: a kept child is applied without controller reference and
// released on deletion (also when only the node or only the live child says keep), a foreground
// child's DELETE asks for foreground propagation, the others background; a second pass sends nothing.
func TestGraphDeleteHonoursDeletionChoices(t *testing.T) {
	build := func(liveKeep, nodeKeep bool) *Graph {
		g := New()
		data := g.Add("data", cm("data"))
		if nodeKeep {
			data.KeepOnDelete()
		}
		old := g.Add("old", cm("old")) // applied kept; the node no longer says so
		if liveKeep {
			old.KeepOnDelete()
		}
		g.Add("app", cm("app")).DependsOn("data", "old").DeletionPropagation(metav1.DeletePropagationForeground)
		g.Add("front", cm("front")).DependsOn("app")
		return g
	}
	log := &deletionLog{}
	c := log.client(t)
	a := apply.NewApplier(c, c)
	app := applytest.Owner("app")
	// "data" is applied before it was marked kept, "old" while it was.
	applied := New()
	applied.Add("data", cm("data"))
	applied.Add("old", cm("old")).KeepOnDelete()
	applied.Add("app", cm("app")).DependsOn("data", "old")
	applied.Add("front", cm("front")).DependsOn("app")
	if _, err := applied.Apply(t.Context(), a, app); err != nil {
		t.Fatal(err)
	}
	state := func() map[string]string {
		out := map[string]string{}
		for _, n := range []string{"data", "old", "app", "front"} {
			out[n] = childState(t, c, n, app)
		}
		return out
	}
	if diff := cmp.Diff(map[string]string{"data": "controlled+tracked", "old": "tracked", "app": "controlled+tracked", "front": "controlled+tracked"}, state()); diff != "" {
		t.Fatalf("after apply (-want +got):\n%s", diff)
	}
	log.reset()
	del := build(false, true)
	var passes int
	for passes = 1; passes < 10; passes++ {
		res, err := del.Delete(t.Context(), a, app)
		if err != nil {
			t.Fatal(err)
		}
		if res.Done {
			break
		}
	}
	type outcome struct {
		State   map[string]string
		Deletes map[string]metav1.DeletionPropagation
		Patches []string
	}
	sort.Strings(log.patches)
	got := outcome{state(), log.deletes, log.patches}
	want := outcome{
		State:   map[string]string{"data": "released", "old": "released", "app": "gone", "front": "gone"},
		Deletes: map[string]metav1.DeletionPropagation{"app": metav1.DeletePropagationForeground, "front": metav1.DeletePropagationBackground},
		Patches: []string{"data", "old"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deletion in %d passes (-want +got):\n%s", passes, diff)
	}
	log.reset()
	if res, err := del.Delete(t.Context(), a, app); err != nil || !res.Done {
		t.Fatalf("another pass: %v, %v; want done", res, err)
	}
	if log.writes.N != 0 {
		t.Errorf("another pass sent %d writes, want none", log.writes.N)
	}
	// The released children stay released: the owner's DeleteOwned sweep does not find them.
	if res, err := seam.Of(a).DeleteOwned(t.Context(), app, seam.OwnedScope{}, &corev1.ConfigMap{}); err != nil || !res.Done || log.writes.N != 0 {
		t.Errorf("DeleteOwned after release: %v, %v, %d writes; want done, no write", res, err, log.writes.N)
	}
}

// TestPruneHonoursDeletionChoices: a kept child no longer declared is released (once), not deleted
// and not reported; a foreground one is deleted with foreground propagation; DeleteOwned releases kept
// children too.
func TestPruneHonoursDeletionChoices(t *testing.T) {
	log := &deletionLog{}
	c := log.client(t)
	a := apply.NewApplier(c, c)
	app := applytest.Owner("app")
	g := New()
	g.Add("stay", cm("stay"))
	g.Add("data", cm("data")).KeepOnDelete()
	g.Add("web", cm("web")).DeletionPropagation(metav1.DeletePropagationForeground)
	g.Add("plain", cm("plain"))
	if _, err := g.Apply(t.Context(), a, app); err != nil {
		t.Fatal(err)
	}
	log.reset()
	var pruned []string
	for range 2 { // the second Prune finds nothing left to do
		objs, err := graphOf("stay").Prune(t.Context(), a, app)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			pruned = append(pruned, o.GetName())
		}
	}
	sort.Strings(pruned)
	type outcome struct {
		Pruned  []string
		State   map[string]string
		Deletes map[string]metav1.DeletionPropagation
		Patches []string
	}
	state := map[string]string{}
	for _, n := range []string{"stay", "data", "web", "plain"} {
		state[n] = childState(t, c, n, app)
	}
	want := outcome{
		Pruned:  []string{"plain", "web"},
		State:   map[string]string{"stay": "controlled+tracked", "data": "released", "web": "gone", "plain": "gone"},
		Deletes: map[string]metav1.DeletionPropagation{"web": metav1.DeletePropagationForeground, "plain": metav1.DeletePropagationBackground},
		Patches: []string{"data"},
	}
	if diff := cmp.Diff(want, outcome{pruned, state, log.deletes, log.patches}); diff != "" {
		t.Errorf("prune (-want +got):\n%s", diff)
	}

	// DeleteOwned (the owner's spec cannot be built) releases a kept child as well.
	kept := New()
	kept.Add("data2", cm("data2")).KeepOnDelete()
	if _, err := kept.Apply(t.Context(), a, app); err != nil {
		t.Fatal(err)
	}
	log.reset()
	res, err := seam.Of(a).DeleteOwned(t.Context(), app, seam.OwnedScope{}, &corev1.ConfigMap{})
	if err != nil || childState(t, c, "data2", app) != "released" || log.deletes["data2"] != "" {
		t.Errorf("DeleteOwned: %v, %v; data2 %s, deletes %v; want released, not deleted", res, err, childState(t, c, "data2", app), log.deletes)
	}
}

// TestKeptChildIsNeverRecreated: apply.WithRecreateOnImmutable deletes and recreates a child whose immutable
// field changed, but not a kept one: its change stays an *ImmutableFieldError, and nothing is deleted.
func TestKeptChildIsNeverRecreated(t *testing.T) {
	for name, keep := range map[string]bool{"plain child is recreated": false, "kept child is not": true} {
		t.Run(name, func(t *testing.T) {
			log := &deletionLog{}
			c := log.client(t)
			immutable := interceptor.Funcs{Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				body, err := applytest.ApplyBody(obj, patch)
				if err != nil {
					return err
				}
				if body != nil && body["data"].(map[string]any)["k"] == "changed" {
					if md, _ := body["metadata"].(map[string]any); md["resourceVersion"] != "1" /* create only */ {
						return apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "data",
							field.ErrorList{field.Invalid(field.NewPath("data"), "changed", "field is immutable")})
					}
				}
				return applytest.GuardedPatch(ctx, cl, obj, patch, opts...)
			}}
			c = interceptor.NewClient(c, immutable)
			a := apply.NewApplier(c, c, apply.WithRecreateOnImmutable())
			app := applytest.Owner("app")
			desired := func(v string) *corev1.ConfigMap {
				o := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Data: map[string]string{"k": v}}
				if keep {
					o.Annotations = map[string]string{apply.DeletionPolicyAnnotation: marks.PolicyKeep}
				}
				return o
			}
			if _, _, err := a.Apply(t.Context(), app, desired("v")); err != nil {
				t.Fatal(err)
			}
			log.reset()
			_, op, err := a.Apply(t.Context(), app, desired("changed"))
			var immutableErr *apply.ImmutableFieldError
			got := fmt.Sprintf("%s, immutable error %v, deleted %v", op, errors.As(err, &immutableErr), len(log.deletes) > 0)
			want := "Recreated, immutable error false, deleted true"
			if keep {
				want = ", immutable error true, deleted false"
			}
			if got != want {
				t.Errorf("apply of a changed immutable field: %s (%v), want %s", got, err, want)
			}
		})
	}
}

// TestReleaseFromStaleCopy: the copy judged is older than the live child (here it still carries the
// owner reference a later apply removed): the guarded patch fails, the child is read once and released
// from the API server's copy, and the record counts it gone, so that the stale copy is not released
// again.
func TestReleaseFromStaleCopy(t *testing.T) {
	log := &deletionLog{}
	server := log.client(t)
	var stale *corev1.ConfigMap
	// The cache shows the stale copy once it is set.
	cache := interceptor.NewClient(server, interceptor.Funcs{Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if cm, ok := obj.(*corev1.ConfigMap); ok && stale != nil && key.Name == stale.Name {
			stale.DeepCopyInto(cm)
			return nil
		}
		return cl.Get(ctx, key, obj, opts...)
	}})
	a := apply.NewApplier(cache, server)
	app := applytest.Owner("app")
	kept := cm("data")
	kept.Annotations = map[string]string{apply.DeletionPolicyAnnotation: marks.PolicyKeep}
	if _, _, err := a.Apply(t.Context(), app, kept); err != nil {
		t.Fatal(err)
	}
	live := &corev1.ConfigMap{}
	if err := server.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "data"}, live); err != nil {
		t.Fatal(err)
	}
	stale = live.DeepCopy()
	stale.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "app", UID: app.UID, Controller: ptr.To(true)}}
	log.reset()
	if step, err := a.Delete(t.Context(), app, kept); err != nil || step.Live != nil {
		t.Fatalf("release: %v, still there: %v", err, step.Live != nil)
	}
	if diff := cmp.Diff([]string{"data", "data"}, log.patches); diff != "" {
		t.Errorf("patches (-want +got): the failed one from the stale copy, then the one from the fresh copy\n%s", diff)
	}
	// The cache still shows the stale copy: the record counts the released child gone, so it is not
	// released again.
	if step, err := a.Delete(t.Context(), app, kept); err != nil || step.Live != nil || len(log.patches) != 2 {
		t.Errorf("second pass: %v, still there: %v, patches %v; want nothing sent", err, step.Live != nil, log.patches)
	}
	if got := childState(t, server, "data", app); got != "released" {
		t.Errorf("data is %s, want released", got)
	}
}
