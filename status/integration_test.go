//go:build integration

package status_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestMain starts a real kube-apiserver and etcd with the Widget CRD for the integration tests (fuzz
// workers start none: harness.Main).
func TestMain(m *testing.M) {
	harness.Main(m, harness.WithCRDPaths(testapi.CRDDir()), harness.WithSchemeAdders(testapi.AddToScheme))
}

// counted returns a client whose requests the returned counter records.
func counted(t *testing.T) (client.Client, *harness.RequestCounter) {
	t.Helper()
	env := harness.Default()
	counter := harness.NewRequestCounter()
	return env.ClientFor(t, counter.Wrap(env.Config)), counter
}

func newWidget(t *testing.T) *testapi.Widget {
	t.Helper()
	env := harness.Default()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: env.Namespace(t)}}
	if err := env.Client.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestIntegrationConflictKeepsOtherWritersCondition(t *testing.T) {
	env := harness.Default()
	ctx := t.Context()
	c, counter := counted(t)
	w := newWidget(t)

	ours := &testapi.Widget{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), ours); err != nil {
		t.Fatal(err)
	}
	start := ours.DeepCopy()
	status.MarkReconciling(ours, "Progressing", "starting")
	if _, err := status.NewPatcher(c).Patch(ctx, ours, start); err != nil {
		t.Fatal(err)
	}
	before := ours.DeepCopy() // our read; the other writer changes the object after it

	// Another writer changes status between our read and our patch.
	theirs := &testapi.Widget{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), theirs); err != nil {
		t.Fatal(err)
	}
	thBefore := theirs.DeepCopy()
	status.Set(theirs, metav1.Condition{Type: "External", Status: metav1.ConditionTrue, Reason: "Checked", Message: "by another controller"})
	theirs.Status.Summary = "theirs"
	if wrote, err := status.NewPatcher(env.Client).Patch(ctx, theirs, thBefore); err != nil || !wrote {
		t.Fatalf("other writer: %v, %v", wrote, err)
	}

	counter.Reset()
	status.MarkReady(ours, "Succeeded", "all children ready")
	ours.Status.ReadyChildren = 2
	wrote, err := status.NewPatcher(c, status.WithRetry(wait.Backoff{Duration: time.Millisecond, Factor: 2, Steps: 6})).Patch(ctx, ours, before)
	if err != nil || !wrote {
		t.Fatalf("Patch = %v, %v; want true, nil", wrote, err)
	}
	reqs := counter.Snapshot()
	if got := []int{reqs.Count("patch", "widgets/status"), reqs.Count("get", "widgets")}; !slices.Equal(got, []int{2, 1}) {
		t.Errorf("status patches, gets = %v; want [2 1] (409, re-read, retry):\n%s", got, reqs)
	}

	got := &testapi.Widget{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, c := range got.Status.Conditions {
		types = append(types, c.Type+"="+string(c.Status))
	}
	if diff := cmp.Diff([]string{"Ready=True", "External=True"}, types); diff != "" {
		t.Errorf("conditions on the server (-want +got):\n%s", diff)
	}
	if got.Status.Summary != "theirs" || got.Status.ReadyChildren != 2 {
		t.Errorf("summary %q, readyChildren %d; want theirs and 2", got.Status.Summary, got.Status.ReadyChildren)
	}
	if diff := cmp.Diff(got.Status, ours.Status); diff != "" {
		t.Errorf("obj not updated from the server's answer (-server +obj):\n%s", diff)
	}
}

func TestIntegrationNoWriteWhenUnchangedAndStableTransitionTime(t *testing.T) {
	env := harness.Default()
	ctx := t.Context()
	c, counter := counted(t)
	w := newWidget(t)
	p := status.NewPatcher(c)

	// A reconcile-like loop: read, compute the same conditions, patch.
	reconcileOnce := func() (bool, *testapi.Widget) {
		t.Helper()
		obj := &testapi.Widget{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), obj); err != nil {
			t.Fatal(err)
		}
		before := obj.DeepCopy()
		status.MarkReady(obj, "Succeeded", "ready")
		status.Set(obj, metav1.Condition{Type: "Synced", Status: metav1.ConditionTrue, Reason: "Applied", Message: "config applied"})
		wrote, err := p.Patch(ctx, obj, before)
		if err != nil {
			t.Fatal(err)
		}
		return wrote, obj
	}
	wrote, first := reconcileOnce()
	if !wrote {
		t.Fatal("first reconcile did not write")
	}
	readyLTT := meta.FindStatusCondition(first.GetConditions(), status.Ready).LastTransitionTime

	counter.Reset()
	for range 3 {
		if wrote, _ := reconcileOnce(); wrote {
			t.Error("a reconcile with unchanged status wrote")
		}
	}
	if n := counter.Snapshot().Writes(); n != 0 {
		t.Errorf("%d writes for unchanged status, want 0:\n%s", n, counter.Snapshot())
	}

	// A spec change moves observedGeneration but not lastTransitionTime.
	spec := &testapi.Widget{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), spec); err != nil {
		t.Fatal(err)
	}
	spec.Spec.Replicas = 3
	if err := env.Client.Update(ctx, spec); err != nil {
		t.Fatal(err)
	}
	wrote, after := reconcileOnce()
	if !wrote {
		t.Fatal("reconcile after a spec change did not write observedGeneration")
	}
	ready := meta.FindStatusCondition(after.GetConditions(), status.Ready)
	if ready.ObservedGeneration != spec.Generation || after.Status.ObservedGeneration != spec.Generation {
		t.Errorf("observedGeneration condition %d, status %d; want %d", ready.ObservedGeneration, after.Status.ObservedGeneration, spec.Generation)
	}
	if !ready.LastTransitionTime.Equal(&readyLTT) {
		t.Errorf("lastTransitionTime moved from %v to %v without a status change", readyLTT, ready.LastTransitionTime)
	}
}

func TestIntegrationRemovedConditionAndFieldAreRemoved(t *testing.T) {
	env := harness.Default()
	ctx := t.Context()
	w := newWidget(t)
	p := status.NewPatcher(env.Client)

	obj := &testapi.Widget{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), obj); err != nil {
		t.Fatal(err)
	}
	before := obj.DeepCopy()
	status.MarkStalled(obj, "InvalidSpec", "bad")
	obj.Status.Summary = "stalled"
	if _, err := p.Patch(ctx, obj, before); err != nil {
		t.Fatal(err)
	}
	before = obj.DeepCopy()
	status.MarkReady(obj, "Succeeded", "fixed")
	obj.Status.Summary = ""
	if _, err := p.Patch(ctx, obj, before); err != nil {
		t.Fatal(err)
	}
	got := &testapi.Widget{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	if meta.FindStatusCondition(got.GetConditions(), status.Stalled) != nil || !status.IsReady(got) || got.Status.Summary != "" {
		t.Errorf("server status = %+v; want Ready only and no summary", got.Status)
	}
}

// TestIntegrationConcurrentWriters runs several writers, each owning one condition type, that read and
// patch the same object at the same time. Every writer's final condition must survive.
func TestIntegrationConcurrentWriters(t *testing.T) {
	env := harness.Default()
	ctx := t.Context()
	w := newWidget(t)
	const writers, rounds = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	for i := range writers {
		wg.Go(func() {
			p := status.NewPatcher(env.Client, status.WithRetry(wait.Backoff{Duration: time.Millisecond, Factor: 2, Steps: 51}))
			for r := range rounds {
				obj := &testapi.Widget{}
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), obj); err != nil {
					errs <- err
					return
				}
				before := obj.DeepCopy()
				status.Set(obj, metav1.Condition{Type: fmt.Sprintf("Writer%d", i), Status: metav1.ConditionTrue, Reason: "Round", Message: fmt.Sprintf("round %d", r)})
				if _, err := p.Patch(ctx, obj, before); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got := &testapi.Widget{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	for i := range writers {
		c := meta.FindStatusCondition(got.GetConditions(), fmt.Sprintf("Writer%d", i))
		if c == nil || c.Message != fmt.Sprintf("round %d", rounds-1) {
			t.Errorf("Writer%d condition = %v, want the last round", i, c)
		}
	}
	if len(got.Status.Conditions) != writers {
		t.Errorf("%d conditions, want %d: %v", len(got.Status.Conditions), writers, got.Status.Conditions)
	}
}
