package fakes_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/testing/fakes"
)

// newScheme returns client-go's types plus the test Widget (a custom resource with a status).
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := testapi.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

func TestStatusSubresourceForSeededTypes(t *testing.T) {
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w"}, Spec: testapi.WidgetSpec{Replicas: 1}}
	c := fakes.NewClient(newScheme(), fakes.WithObjects(w))
	ctx := t.Context()

	var live testapi.Widget
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), &live); err != nil {
		t.Fatal(err)
	}
	// A plain update leaves status alone.
	live.Spec.Replicas = 2
	live.Status.Summary = "Sneaky"
	if err := c.Update(ctx, &live); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), &live); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(testapi.WidgetStatus{}, live.Status); diff != "" {
		t.Errorf("status after a plain update (-want +got):\n%s", diff)
	}
	// A status update writes only status.
	live.Spec.Replicas = 3
	live.Status.Summary = "Ready"
	if err := c.Status().Update(ctx, &live); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), &live); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(testapi.WidgetSpec{Replicas: 2}, live.Spec); diff != "" {
		t.Errorf("spec after a status update (-want +got):\n%s", diff)
	}
	if live.Status.Summary != "Ready" {
		t.Errorf("status summary = %q, want Ready", live.Status.Summary)
	}
}

func TestStatusSubresourceWithoutSeed(t *testing.T) {
	cases := map[string]struct {
		opts      []fakes.Option
		wantPhase string
	}{
		"enabled: update keeps status":      {opts: []fakes.Option{fakes.WithStatusSubresource(&testapi.Widget{})}, wantPhase: ""},
		"not enabled: update writes status": {wantPhase: "Changed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fakes.NewClient(newScheme(), tc.opts...)
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w"}}
			if err := c.Create(t.Context(), w); err != nil {
				t.Fatal(err)
			}
			w.Status.Summary = "Changed"
			if err := c.Update(t.Context(), w); err != nil {
				t.Fatal(err)
			}
			var live testapi.Widget
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(w), &live); err != nil {
				t.Fatal(err)
			}
			if live.Status.Summary != tc.wantPhase {
				t.Errorf("status summary after update = %q, want %q", live.Status.Summary, tc.wantPhase)
			}
		})
	}
}

func TestConflictEvery(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	c := fakes.NewClient(nil, fakes.WithObjects(cm), fakes.WithConflictEvery(3))
	var results []bool
	for range 6 {
		var live corev1.ConfigMap
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(cm), &live); err != nil {
			t.Fatal(err)
		}
		live.Data = map[string]string{"n": time.Now().String()}
		err := c.Update(t.Context(), &live)
		if err != nil && !apierrors.IsConflict(err) {
			t.Fatalf("update: %v", err)
		}
		results = append(results, apierrors.IsConflict(err))
	}
	if diff := cmp.Diff([]bool{false, false, true, false, false, true}, results); diff != "" {
		t.Errorf("conflicts per update (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(fakes.Injected{Conflicts: 2}, c.Injected()); diff != "" {
		t.Errorf("Injected (-want +got):\n%s", diff)
	}
}

func TestConflictRateIsSeeded(t *testing.T) {
	run := func(seed uint64) []bool {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
		c := fakes.NewClient(nil, fakes.WithObjects(cm), fakes.WithConflictRate(0.5, seed))
		var out []bool
		for range 40 {
			patch := client.RawPatch("application/merge-patch+json", []byte(`{"data":{"k":"v"}}`))
			err := c.Patch(t.Context(), cm.DeepCopy(), patch)
			if err != nil && !apierrors.IsConflict(err) {
				t.Fatalf("patch: %v", err)
			}
			out = append(out, err != nil)
		}
		if got, want := c.Injected().Conflicts, count(out); got != want {
			t.Errorf("Injected().Conflicts = %d, want %d", got, want)
		}
		return out
	}
	a, b := run(7), run(7)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed, different conflicts (-first +second):\n%s", diff)
	}
	if n := count(a); n == 0 || n == len(a) {
		t.Errorf("rate 0.5 gave %d conflicts out of %d", n, len(a))
	}
}

func count(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func TestConflictsOnStatusWrites(t *testing.T) {
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w"}}
	c := fakes.NewClient(newScheme(), fakes.WithObjects(w), fakes.WithConflictEvery(1),
		fakes.WithConflictsOn(func(op fakes.Op) bool { return op.Subresource == "status" }))
	live := w.DeepCopy()
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(w), live); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(t.Context(), live); err != nil {
		t.Errorf("plain update: %v, want success", err)
	}
	live.Status.Summary = "Ready"
	if err := c.Status().Update(t.Context(), live); !apierrors.IsConflict(err) {
		t.Errorf("status update: %v, want a conflict", err)
	}
}

func TestWithError(t *testing.T) {
	boom := errors.New("boom")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w"}}
	cases := map[string]struct {
		verb, kind string
		call       func(c client.Client) error
		wantErr    bool
	}{
		"matching verb and kind": {
			verb: fakes.VerbGet, kind: "ConfigMap", wantErr: true,
			call: func(c client.Client) error {
				return c.Get(t.Context(), client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
			},
		},
		"other kind passes": {
			verb: fakes.VerbGet, kind: "Widget",
			call: func(c client.Client) error {
				return c.Get(t.Context(), client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
			},
		},
		"other verb passes": {
			verb: fakes.VerbDelete, kind: "ConfigMap",
			call: func(c client.Client) error {
				return c.Get(t.Context(), client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
			},
		},
		"list uses item kind": {
			verb: fakes.VerbList, kind: "ConfigMap", wantErr: true,
			call: func(c client.Client) error { return c.List(t.Context(), &corev1.ConfigMapList{}) },
		},
		"any verb": {
			kind: "ConfigMap", wantErr: true,
			call: func(c client.Client) error { return c.Delete(t.Context(), cm.DeepCopy()) },
		},
		"subresource only": {
			verb: fakes.VerbUpdate, kind: "Widget/status", wantErr: true,
			call: func(c client.Client) error { return c.Status().Update(t.Context(), w.DeepCopy()) },
		},
		"subresource kind does not match main resource": {
			verb: fakes.VerbUpdate, kind: "Widget/status",
			call: func(c client.Client) error {
				live := &testapi.Widget{}
				if err := c.Get(t.Context(), client.ObjectKeyFromObject(w), live); err != nil {
					return err
				}
				return c.Update(t.Context(), live)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fakes.NewClient(newScheme(), fakes.WithObjects(cm.DeepCopy(), w.DeepCopy()), fakes.WithError(tc.verb, tc.kind, boom))
			err := tc.call(c)
			if got := errors.Is(err, boom); got != tc.wantErr {
				t.Errorf("error = %v, want boom: %v", err, tc.wantErr)
			}
			if !tc.wantErr && err != nil {
				t.Errorf("unexpected error: %v", err)
			}
		})
	}
}

func TestCallsAreRecorded(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	c := fakes.NewClient(nil)
	ctx := t.Context()
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	want := []fakes.Op{
		{Verb: "create", Kind: "ConfigMap", Namespace: "ns", Name: "cm"},
		{Verb: "list", Kind: "ConfigMap", Namespace: "ns"},
		{Verb: "delete", Kind: "ConfigMap", Namespace: "ns", Name: "cm"},
	}
	if diff := cmp.Diff(want, c.Calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if c.Writes() != 2 {
		t.Errorf("Writes() = %d, want 2", c.Writes())
	}
	c.ResetCalls()
	if len(c.Calls()) != 0 {
		t.Errorf("calls after ResetCalls: %v", c.Calls())
	}
}

func TestLatencyHonoursContext(t *testing.T) {
	c := fakes.NewClient(nil, fakes.WithLatency(time.Hour))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "x"}, &corev1.ConfigMap{})
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("Get = %v, want the context's error", err)
	}
	if got := c.Injected().Delayed; got != 1 {
		t.Errorf("Delayed = %d, want 1", got)
	}
}

func TestWithBuilderAddsAnIndex(t *testing.T) {
	owned := func(name, owner string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: map[string]string{"owner": owner}}
	}
	c := fakes.NewClient(nil, fakes.WithObjects(owned("a", "x"), owned("b", "y"), owned("c", "x")),
		fakes.WithBuilder(func(b *fake.ClientBuilder) {
			b.WithIndex(&corev1.ConfigMap{}, "data.owner", func(o client.Object) []string {
				return []string{o.(*corev1.ConfigMap).Data["owner"]}
			})
		}))
	var list corev1.ConfigMapList
	if err := c.List(t.Context(), &list, client.MatchingFields{"data.owner": "x"}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cm := range list.Items {
		names = append(names, cm.Name)
	}
	if diff := cmp.Diff([]string{"a", "c"}, names); diff != "" {
		t.Errorf("listed by the index (-want +got):\n%s", diff)
	}
}
