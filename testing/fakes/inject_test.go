//go:build integration

package fakes_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/testing/fakes"
	"github.com/convergo-dev/convergo/testing/harness"
)

func newInjectedClient(t *testing.T, inj *fakes.Injector) client.Client {
	t.Helper()
	env := harness.Default()
	return env.ClientFor(t, inj.Wrap(env.Config))
}

func TestInjectorConflictsWritesOnly(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	ctx := t.Context()
	existing := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "existing"}, Data: map[string]string{"k": "v"}}
	if err := env.Client.Create(ctx, existing); err != nil {
		t.Fatal(err)
	}

	inj := fakes.NewInjector(fakes.WithInjectRate(1))
	c := newInjectedClient(t, inj)

	// Reads pass.
	var live corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKeyFromObject(existing), &live); err != nil {
		t.Fatalf("get through the injector: %v", err)
	}
	if err := c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)); err != nil {
		t.Fatalf("list through the injector: %v", err)
	}

	// Writes fail with a proper Conflict and never reach the server.
	created := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "new"}}
	if err := c.Create(ctx, created); !apierrors.IsConflict(err) {
		t.Errorf("create: %v, want a conflict", err)
	}
	live.Data["k"] = "changed"
	if err := c.Update(ctx, &live); !apierrors.IsConflict(err) {
		t.Errorf("update: %v, want a conflict", err)
	}
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"data":{"k":"patched"}}`))
	err := c.Patch(ctx, existing.DeepCopy(), patch)
	if !apierrors.IsConflict(err) {
		t.Errorf("patch: %v, want a conflict", err)
	}
	if status, ok := err.(apierrors.APIStatus); ok {
		s := status.Status()
		want := metav1.StatusDetails{Name: "existing", Kind: "configmaps"}
		if diff := cmp.Diff(want, *s.Details); diff != "" || s.Code != 409 || s.Reason != metav1.StatusReasonConflict {
			t.Errorf("conflict status: code %d reason %s details (-want +got):\n%s", s.Code, s.Reason, diff)
		}
	}
	// Deletes pass unless asked for.
	if err := c.Delete(ctx, existing.DeepCopy()); err != nil {
		t.Errorf("delete: %v, want success", err)
	}

	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(created), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the injected create reached the server: get = %v", err)
	}
	want := fakes.InjectedStats{Writes: 3, Conflicts: 3, ByResource: map[string]int{"configmaps": 3}}
	if diff := cmp.Diff(want, inj.Stats()); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func TestInjectorDeletesAndResources(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	ctx := t.Context()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"}}
	for _, obj := range []client.Object{cm, secret} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	inj := fakes.NewInjector(fakes.WithInjectRate(1), fakes.WithInjectDeletes(), fakes.WithInjectResources("configmaps"))
	c := newInjectedClient(t, inj)
	if err := c.Delete(ctx, cm.DeepCopy()); !apierrors.IsConflict(err) {
		t.Errorf("delete configmap: %v, want a conflict", err)
	}
	if err := c.Delete(ctx, secret.DeepCopy()); err != nil {
		t.Errorf("delete secret: %v, want success (not a selected resource)", err)
	}
	inj.SetEnabled(false)
	if err := c.Delete(ctx, cm.DeepCopy()); err != nil {
		t.Errorf("delete configmap with injection off: %v", err)
	}
	if got := inj.Stats().Conflicts; got != 1 {
		t.Errorf("conflicts = %d, want 1", got)
	}
}

func TestInjectorSeededFraction(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	ctx := t.Context()
	run := func() []bool {
		inj := fakes.NewInjector(fakes.WithInjectRate(0.3), fakes.WithInjectSeed(42))
		c := newInjectedClient(t, inj)
		var out []bool
		for i := range 30 {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "frac-"}, Data: map[string]string{"i": fmt.Sprint(i)}}
			err := c.Create(ctx, cm)
			if err != nil && !apierrors.IsConflict(err) {
				t.Fatalf("create: %v", err)
			}
			out = append(out, err != nil)
		}
		s := inj.Stats()
		if s.Writes != 30 || s.Conflicts != count(out) {
			t.Errorf("stats %+v, want 30 writes and %d conflicts", s, count(out))
		}
		return out
	}
	first, second := run(), run()
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("same seed, different requests failed (-first +second):\n%s", diff)
	}
	if n := count(first); n == 0 || n == len(first) {
		t.Errorf("rate 0.3 failed %d of %d writes", n, len(first))
	}
	var list corev1.ConfigMapList
	if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	created := 0
	for _, cm := range list.Items {
		if cm.GenerateName == "frac-" {
			created++
		}
	}
	if want := 2 * (len(first) - count(first)); created != want {
		t.Errorf("%d configmaps reached the server, want %d", created, want)
	}
}
