//go:build integration

package finalizer_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/convergo-dev/convergo/finalizer"
	"github.com/convergo-dev/convergo/testing/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

// counted returns a client whose requests the returned counter records.
func counted(t *testing.T) (client.Client, *harness.RequestCounter) {
	t.Helper()
	env := harness.Default()
	counter := harness.NewRequestCounter()
	return env.ClientFor(t, counter.Wrap(env.Config)), counter
}

func newConfigMap(t *testing.T, finalizers ...string) *corev1.ConfigMap {
	t.Helper()
	env := harness.Default()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: env.Namespace(t), Finalizers: finalizers}}
	if err := env.Client.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropFinalizers(t, cm) })
	return cm
}

// dropFinalizers removes every finalizer of cm, in a cleanup, so that nothing of ours outlives the
// test and the namespace can go.
func dropFinalizers(t *testing.T, cm *corev1.ConfigMap) {
	env := harness.Default()
	ctx := context.WithoutCancel(t.Context()) // cancelled once cleanups run
	fresh := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), fresh); err == nil {
		for _, f := range fresh.Finalizers {
			_, _ = finalizer.Remove(ctx, env.Client, fresh, f)
		}
	}
}

func serverFinalizers(t *testing.T, obj client.Object) []string {
	t.Helper()
	fresh := &corev1.ConfigMap{}
	if err := harness.Default().Client.Get(t.Context(), client.ObjectKeyFromObject(obj), fresh); err != nil {
		t.Fatal(err)
	}
	return fresh.Finalizers
}

// TestIntegrationControllersConcurrently has several controllers add their finalizers to one object at the
// same time, each starting from the same stale copy, then remove some while the others ensure again.
func TestIntegrationControllersConcurrently(t *testing.T) {
	ctx := t.Context()
	env := harness.Default()
	cm := newConfigMap(t)
	names := []string{"a.example.com/f", "b.example.com/f", "c.example.com/f", "d.example.com/f"}

	run := func(op func(name string, obj *corev1.ConfigMap) error) {
		var wg sync.WaitGroup
		errs := make(chan error, len(names))
		snapshot := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), snapshot); err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			obj := snapshot.DeepCopy() // every controller works from the same, soon stale, copy
			wg.Go(func() {
				if err := op(name, obj); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}

	run(func(name string, obj *corev1.ConfigMap) error {
		_, err := finalizer.Ensure(ctx, env.Client, obj, name)
		return err
	})
	got := serverFinalizers(t, cm)
	slices.Sort(got)
	if diff := cmp.Diff(names, got); diff != "" {
		t.Fatalf("finalizers after concurrent Ensure (-want +got):\n%s", diff)
	}

	// a and c remove theirs while b and d ensure again (a no-op for them) and someone edits labels.
	run(func(name string, obj *corev1.ConfigMap) error {
		switch name {
		case names[0], names[2]:
			_, err := finalizer.Remove(ctx, env.Client, obj, name)
			return err
		default:
			_, err := finalizer.Ensure(ctx, env.Client, obj, name)
			if err != nil {
				return err
			}
			return env.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType,
				fmt.Appendf(nil, `{"metadata":{"labels":{"edited-by":%q}}}`, name[:1])))
		}
	})
	got = serverFinalizers(t, cm)
	slices.Sort(got)
	if diff := cmp.Diff([]string{names[1], names[3]}, got); diff != "" {
		t.Errorf("finalizers after concurrent Remove (-want +got):\n%s", diff)
	}
}

func TestIntegrationEnsureDoesNotConflictWithUnrelatedUpdate(t *testing.T) {
	ctx := t.Context()
	env := harness.Default()
	c, counter := counted(t)
	cm := newConfigMap(t, "other.example.com/keep")
	stale := cm.DeepCopy()

	// Someone else changes data and labels: the resourceVersion moves on.
	other := cm.DeepCopy()
	other.Labels = map[string]string{"app": "x"}
	other.Data = map[string]string{"k": "v"}
	if err := env.Client.Update(ctx, other); err != nil {
		t.Fatal(err)
	}

	counter.Reset()
	added, err := finalizer.Ensure(ctx, c, stale, "ours.example.com/f")
	if err != nil || !added {
		t.Fatalf("Ensure = %v, %v; want true, nil", added, err)
	}
	// Discovery on the client's first use aside, exactly one request: the patch.
	if reqs := counter.Snapshot().Filter(harness.Request.ResourceRequest); len(reqs) != 1 || reqs.Count("patch", "configmaps") != 1 {
		t.Errorf("want exactly one patch, got:\n%s", reqs)
	}
	if diff := cmp.Diff([]string{"other.example.com/keep", "ours.example.com/f"}, stale.Finalizers); diff != "" {
		t.Errorf("finalizers (-want +got):\n%s", diff)
	}
	if stale.Labels["app"] != "x" || stale.Data["k"] != "v" {
		t.Errorf("obj not updated from the response: labels %v data %v", stale.Labels, stale.Data)
	}
}

func TestIntegrationEnsureAndRemoveRetryWhenTheListMoved(t *testing.T) {
	ctx := t.Context()
	env := harness.Default()
	c, counter := counted(t)
	const ours = "ours.example.com/f"

	// Ensure from a copy that saw an absent list, while another controller added its finalizer.
	cm := newConfigMap(t)
	stale := cm.DeepCopy()
	if _, err := finalizer.Ensure(ctx, env.Client, cm.DeepCopy(), "a.example.com/f"); err != nil {
		t.Fatal(err)
	}
	counter.Reset()
	if added, err := finalizer.Ensure(ctx, c, stale, ours); err != nil || !added {
		t.Fatalf("Ensure = %v, %v", added, err)
	}
	if got := []int{counter.Snapshot().Count("patch", "configmaps"), counter.Snapshot().Count("get", "configmaps")}; !slices.Equal(got, []int{2, 1}) {
		t.Errorf("patches, gets = %v; want [2 1] (failed test, re-read, retry)", got)
	}
	if diff := cmp.Diff([]string{"a.example.com/f", ours}, serverFinalizers(t, cm)); diff != "" {
		t.Errorf("finalizers (-want +got):\n%s", diff)
	}

	// Ensure again from the same stale copy: the server already has ours, so no duplicate.
	stale2 := cm.DeepCopy()
	if added, err := finalizer.Ensure(ctx, c, stale2, ours); err != nil || added {
		t.Fatalf("Ensure from a stale copy = %v, %v; want false, nil", added, err)
	}
	if diff := cmp.Diff([]string{"a.example.com/f", ours}, serverFinalizers(t, cm)); diff != "" {
		t.Errorf("finalizers after stale Ensure (-want +got):\n%s", diff)
	}

	// Remove from a copy where ours is at index 1, after the other finalizer before it went away.
	stale3 := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), stale3); err != nil {
		t.Fatal(err)
	}
	if _, err := finalizer.Remove(ctx, env.Client, stale3.DeepCopy(), "a.example.com/f"); err != nil {
		t.Fatal(err)
	}
	if _, err := finalizer.Ensure(ctx, env.Client, stale3.DeepCopy(), "z.example.com/f"); err != nil {
		t.Fatal(err)
	}
	counter.Reset()
	if removed, err := finalizer.Remove(ctx, c, stale3, ours); err != nil || !removed {
		t.Fatalf("Remove = %v, %v", removed, err)
	}
	if got := counter.Snapshot().Count("patch", "configmaps"); got != 2 {
		t.Errorf("%d patches, want 2 (failed test at the stale index, retry)", got)
	}
	if diff := cmp.Diff([]string{"z.example.com/f"}, serverFinalizers(t, cm)); diff != "" {
		t.Errorf("finalizers after Remove (-want +got):\n%s", diff)
	}
}

func TestIntegrationNoRequestWhenNothingToDo(t *testing.T) {
	ctx := t.Context()
	c, counter := counted(t)
	cm := newConfigMap(t, "ours.example.com/f")
	counter.Reset()
	if added, err := finalizer.Ensure(ctx, c, cm, "ours.example.com/f"); err != nil || added {
		t.Errorf("Ensure = %v, %v", added, err)
	}
	if removed, err := finalizer.Remove(ctx, c, cm, "absent.example.com/f"); err != nil || removed {
		t.Errorf("Remove = %v, %v", removed, err)
	}
	if reqs := counter.Snapshot(); len(reqs) != 0 {
		t.Errorf("want no request, got:\n%s", reqs)
	}
}

func TestIntegrationFinalizeRemovesOnlyAfterCleanup(t *testing.T) {
	ctx := t.Context()
	env := harness.Default()
	const ours, other = "ours.example.com/f", "other.example.com/keep"
	cm := newConfigMap(t, other, ours)
	if err := env.Client.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	obj := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), obj); err != nil {
		t.Fatal(err)
	}
	if obj.DeletionTimestamp == nil {
		t.Fatal("object not marked for deletion")
	}

	var steps []string
	done := false
	cleanup := func(context.Context) (bool, error) {
		steps = append(steps, fmt.Sprintf("cleanup(done=%v)", done))
		return done, nil
	}
	for _, cleanupDone := range []bool{false, false, true} {
		done = cleanupDone
		finished, err := finalizer.Finalize(ctx, env.Client, obj, ours, cleanup)
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, fmt.Sprintf("finalized=%v server=%v", finished, serverFinalizers(t, cm)))
	}
	want := []string{
		"cleanup(done=false)", "finalized=false server=[other.example.com/keep ours.example.com/f]",
		"cleanup(done=false)", "finalized=false server=[other.example.com/keep ours.example.com/f]",
		"cleanup(done=true)", "finalized=true server=[other.example.com/keep]",
	}
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}

	// Idempotent: the finalizer is gone, so cleanup does not run again.
	if finished, err := finalizer.Finalize(ctx, env.Client, obj, ours, cleanup); err != nil || !finished || len(steps) != len(want) {
		t.Errorf("repeated Finalize = %v, %v, steps %v", finished, err, steps[len(want):])
	}

	// The other controller finishes too: the object goes away; removing from the gone object is a no-op.
	if _, err := finalizer.Remove(ctx, env.Client, obj.DeepCopy(), other); err != nil {
		t.Fatal(err)
	}
	harness.WaitForDeletion(t, env.Client, cm, 30*time.Second)
	if removed, err := finalizer.Remove(ctx, env.Client, obj, other); err != nil || removed {
		t.Errorf("Remove on a gone object = %v, %v; want false, nil", removed, err)
	}
}

// TestIntegrationAdmissionPolicyAddsTheFinalizer: with the policy bound, the API server adds the
// finalizer within the create request, once, next to anyone else's; Ensure then sends nothing. Only
// creations are mutated.
func TestIntegrationAdmissionPolicyAddsTheFinalizer(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	const ours = "policy.example.com/f"
	policy, err := finalizer.AdmissionPolicy(ours, schema.GroupResource{Resource: "configmaps"})
	if err != nil {
		t.Fatal(err)
	}
	env.BindAdmissionPolicy(t, policy, ns, &corev1.ConfigMap{}, func(o client.Object) bool {
		return controllerutil.ContainsFinalizer(o, ours)
	}, time.Minute)

	cases := map[string]struct {
		finalizers []string
		want       []string
	}{
		"none":               {want: []string{ours}},
		"another's":          {finalizers: []string{"other.example.com/keep"}, want: []string{"other.example.com/keep", ours}},
		"ours already there": {finalizers: []string{ours}, want: []string{ours}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "cm-", Namespace: ns, Finalizers: tc.finalizers}}
			if err := env.Client.Create(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { dropFinalizers(t, cm) })
			if diff := cmp.Diff(tc.want, serverFinalizers(t, cm)); diff != "" {
				t.Errorf("finalizers after create (-want +got):\n%s", diff)
			}
			c, counter := counted(t)
			if added, err := finalizer.Ensure(t.Context(), c, cm, ours); err != nil || added {
				t.Errorf("Ensure = %v, %v; want false, nil", added, err)
			}
			if reqs := counter.Snapshot(); len(reqs) != 0 {
				t.Errorf("Ensure sent requests:\n%s", reqs)
			}
		})
	}

	t.Run("updates are not mutated", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "cm-", Namespace: ns}}
		if err := env.Client.Create(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dropFinalizers(t, cm) })
		if removed, err := finalizer.Remove(t.Context(), env.Client, cm, ours); err != nil || !removed {
			t.Fatalf("Remove of the finalizer the policy added = %v, %v; want true, nil", removed, err)
		}
		cm.Data = map[string]string{"k": "v"}
		if err := env.Client.Update(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
		if got := serverFinalizers(t, cm); len(got) != 0 {
			t.Errorf("finalizers after an update = %v, want none", got)
		}
	})
}
