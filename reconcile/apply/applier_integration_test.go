//go:build integration

package apply_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/internal/marks"
	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/internal/fixture"
	"github.com/convergo-dev/convergo/reconcile/internal/intent"
)

func TestIntegrationApplyNoSpuriousWrites(t *testing.T) {
	cases := map[string]func(ns string) client.Object{
		"deployment without defaulted fields": func(string) client.Object { return fixture.Deployment("web") },
		"deployment with many field kinds":    func(string) client.Object { return fixture.RichDeployment("rich") },
		"service": func(string) client.Object {
			return &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "svc", Labels: map[string]string{"app": "web"}},
				Spec: corev1.ServiceSpec{
					Selector: map[string]string{"app": "web"},
					Ports: []corev1.ServicePort{
						{Name: "http", Port: 80, TargetPort: intstr.FromString("http")},
						{Name: "metrics", Port: 9090},
					},
				},
			}
		},
		"secret with stringData": func(string) client.Object {
			return &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "secret"},
				StringData: map[string]string{"password": "s3cret"},
				Data:       map[string][]byte{"raw": {0, 1, 2}},
			}
		},
		"service account": func(string) client.Object {
			return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa"}, AutomountServiceAccountToken: ptr.To(false)}
		},
		"cluster-scoped child": func(ns string) client.Object {
			return &rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: ns + "-role"},
				Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}},
			}
		},
	}
	for name, desired := range cases {
		t.Run(name, func(t *testing.T) {
			f := fixture.New(t)
			a := f.Applier()
			f.MustApply(t, a, desired(f.NS), apply.OperationCreated)

			f.Counter.Reset()
			for i := range 5 {
				_, op, err := a.Apply(t.Context(), f.Owner, desired(f.NS))
				if err != nil {
					t.Fatal(err)
				}
				if op != apply.OperationUnchanged {
					t.Fatalf("apply %d: %s, want Unchanged", i, op)
				}
			}
			reqs := f.Counter.Snapshot()
			if reqs.Writes() != 0 || reqs.Count("get", "") != 0 {
				t.Errorf("repeated applies of a converged child made requests:\n%s", reqs)
			}
		})
	}
}

func TestIntegrationApplyIgnoresServerDefaults(t *testing.T) {
	f := fixture.New(t)
	f.MustApply(t, f.Applier(), fixture.Deployment("web"), apply.OperationCreated)
	// The server defaulted plenty, none of which we sent.
	live := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	f.GetLive(t, live)
	if live.Spec.Replicas == nil || live.Spec.Template.Spec.Containers[0].ImagePullPolicy == "" || live.Spec.RevisionHistoryLimit == nil {
		t.Fatalf("expected server defaults in the live object: %+v", live.Spec)
	}
	if _, op, err := f.Applier().Apply(t.Context(), f.Owner, fixture.Deployment("web")); err != nil || op != apply.OperationUnchanged {
		t.Fatalf("apply over server defaults: %s, %v; want Unchanged", op, err)
	}
}

func TestIntegrationApplyRemovesDroppedFields(t *testing.T) {
	f := fixture.New(t)
	a := f.Applier()
	f.MustApply(t, a, fixture.Deployment("web", func(d *appsv1.Deployment) {
		d.Annotations = map[string]string{"example.com/drop": "x", "example.com/keep": "y"}
		d.Labels = map[string]string{"drop": "x"}
		d.Spec.Template.Spec.Containers[0].Env = append(d.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "DROP", Value: "x"})
	}), apply.OperationCreated)

	f.Counter.Reset()
	f.MustApply(t, a, fixture.Deployment("web", func(d *appsv1.Deployment) {
		d.Annotations = map[string]string{"example.com/keep": "y"}
	}), apply.OperationUpdated)
	if n := f.Counter.Snapshot().Writes(); n != 1 {
		t.Errorf("%d writes to remove fields, want 1:\n%s", n, f.Counter.Snapshot())
	}

	live := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	f.GetLive(t, live)
	if _, ok := live.Annotations["example.com/drop"]; ok {
		t.Errorf("dropped annotation still there: %v", live.Annotations)
	}
	if live.Annotations["example.com/keep"] != "y" {
		t.Errorf("kept annotation missing: %v", live.Annotations)
	}
	if _, ok := live.Labels["drop"]; ok {
		t.Errorf("dropped label still there: %v", live.Labels)
	}
	if env := live.Spec.Template.Spec.Containers[0].Env; len(env) != 1 || env[0].Name != "KEEP" {
		t.Errorf("env = %v, want only KEEP", env)
	}
	if live.Labels[ownership.OwnerUIDLabel] != string(f.Owner.UID) {
		t.Errorf("tracking label lost: %v", live.Labels)
	}
}

// TestIntegrationApplyIntentHashFollowsFields: the intent-hash annotation changes when a field leaves
// the intent, also inside an item of an atomic list, not when a scalar outside lists changes (a
// Deployment's annotations are copied to its ReplicaSet, so a changed annotation costs the Deployment
// controller a write). Each step uses a new Applier, as after a restart, so only the live object (a
// whole cached copy) tells what was applied.
func TestIntegrationApplyIntentHashFollowsFields(t *testing.T) {
	f := fixture.New(t)
	desired := func(replicas int32, effect corev1.TaintEffect, env ...string) *appsv1.Deployment {
		return fixture.Deployment("web", func(d *appsv1.Deployment) {
			d.Spec.Replicas = ptr.To(replicas)
			d.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: effect}}
			for _, name := range env {
				d.Spec.Template.Spec.Containers[0].Env = append(d.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: name, Value: "x"})
			}
		})
	}
	live := func(t *testing.T) *appsv1.Deployment {
		t.Helper()
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
		f.GetLive(t, d)
		return d
	}
	f.MustApply(t, f.Applier(), desired(1, corev1.TaintEffectNoSchedule, "DROP"), apply.OperationCreated)
	steps := []struct {
		name       string
		desired    *appsv1.Deployment
		want       apply.Operation
		sameHash   bool // as the step before
		wantWrites int
		check      func(*appsv1.Deployment) string
	}{
		{name: "new replicas", desired: desired(2, corev1.TaintEffectNoSchedule, "DROP"), want: apply.OperationUpdated, sameHash: true, wantWrites: 1,
			check: func(d *appsv1.Deployment) string {
				if r := ptr.Deref(d.Spec.Replicas, 0); r != 2 {
					return fmt.Sprintf("replicas = %d, want 2", r)
				}
				return ""
			}},
		{name: "env var dropped", desired: desired(2, corev1.TaintEffectNoSchedule), want: apply.OperationUpdated, wantWrites: 1,
			check: func(d *appsv1.Deployment) string {
				if env := d.Spec.Template.Spec.Containers[0].Env; len(env) != 1 || env[0].Name != "KEEP" {
					return fmt.Sprintf("env = %v, want only KEEP", env)
				}
				return ""
			}},
		{name: "toleration's effect dropped (an item of an atomic list)", desired: desired(2, ""), want: apply.OperationUpdated, wantWrites: 1,
			check: func(d *appsv1.Deployment) string {
				if tol := d.Spec.Template.Spec.Tolerations; len(tol) != 1 || tol[0].Effect != "" {
					return fmt.Sprintf("tolerations = %v, want one without effect", tol)
				}
				return ""
			}},
		{name: "converged", desired: desired(2, ""), want: apply.OperationUnchanged, sameHash: true,
			check: func(*appsv1.Deployment) string { return "" }},
	}
	before := live(t).Annotations[intent.HashAnnotation]
	for _, st := range steps {
		f.Counter.Reset()
		f.MustApply(t, f.Applier(), st.desired, st.want)
		if n := f.Counter.Snapshot().Writes(); n != st.wantWrites {
			t.Errorf("%s: %d writes, want %d:\n%s", st.name, n, st.wantWrites, f.Counter.Snapshot())
		}
		d := live(t)
		hash := d.Annotations[intent.HashAnnotation]
		if (hash == before) != st.sameHash {
			t.Errorf("%s: intent hash %q, %q before; want the same: %v", st.name, hash, before, st.sameHash)
		}
		if msg := st.check(d); msg != "" {
			t.Errorf("%s: %s", st.name, msg)
		}
		before = hash
	}
}

func TestIntegrationApplyChangeAndQuantities(t *testing.T) {
	f := fixture.New(t)
	a := f.Applier()
	withResources := func(cpu, memory string) func(*appsv1.Deployment) {
		return func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
			}
		}
	}
	f.MustApply(t, a, fixture.Deployment("web", withResources("1000m", "1024Mi")), apply.OperationCreated)

	live := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	f.GetLive(t, live)
	if got := live.Spec.Template.Spec.Containers[0].Resources.Limits.Cpu().String(); got != "1" {
		t.Logf("server kept cpu as %q", got) // canonicalised to "1" by current servers
	}

	f.Counter.Reset()
	for range 3 {
		if _, op, err := a.Apply(t.Context(), f.Owner, fixture.Deployment("web", withResources("1000m", "1024Mi"))); err != nil || op != apply.OperationUnchanged {
			t.Fatalf("re-apply of canonicalised quantities: %s, %v; want Unchanged", op, err)
		}
	}
	if n := f.Counter.Snapshot().Writes(); n != 0 {
		t.Errorf("%d writes for quantities the server canonicalised, want 0", n)
	}

	f.MustApply(t, a, fixture.Deployment("web", withResources("1000m", "1024Mi"), func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
	}), apply.OperationUpdated)
	reqs := f.Counter.Snapshot()
	if reqs.Writes() != 1 || reqs.Count("patch", "deployments") != 1 {
		t.Errorf("a changed image took other than exactly one patch:\n%s", reqs)
	}
	f.GetLive(t, live)
	if img := live.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.28" {
		t.Errorf("image = %s, want nginx:1.28", img)
	}
}

// TestIntegrationApplyQuantitiesAsHeldAndStringsAsWritten: a quantity the API server re-serialises
// ("5000" bytes in binary format is held as "5k") causes no write, while a string that merely looks
// like a number, changed by someone else ("1.10" to "1.1"), is drift and is repaired.
func TestIntegrationApplyQuantitiesAsHeldAndStringsAsWritten(t *testing.T) {
	f := fixture.New(t)
	a := f.Applier()
	oddMemory := func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
			corev1.ResourceMemory: *resource.NewQuantity(5000*1024*1024+5000, resource.BinarySI),
		}
	}
	f.MustApply(t, a, fixture.Deployment("odd", oddMemory), apply.OperationCreated)
	f.Counter.Reset()
	for range 3 {
		if _, op, err := a.Apply(t.Context(), f.Owner, fixture.Deployment("odd", oddMemory)); err != nil || op != apply.OperationUnchanged {
			t.Fatalf("re-apply of a quantity the server re-serialised: %s, %v; want Unchanged", op, err)
		}
	}
	if n := f.Counter.Snapshot().Writes(); n != 0 {
		t.Errorf("%d writes for a quantity the server re-serialised, want 0", n)
	}

	config := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "versions"}, Data: map[string]string{"version": "1.10"}}
	}
	f.MustApply(t, a, config(), apply.OperationCreated)
	patch := client.RawPatch(types.MergePatchType, []byte(`{"data":{"version":"1.1"}}`))
	tampered := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "versions", Namespace: f.NS}}
	if err := f.Env.Client.Patch(t.Context(), tampered, patch); err != nil {
		t.Fatal(err)
	}
	f.WaitCached(t, tampered)
	f.MustApply(t, a, config(), apply.OperationUpdated)
	live := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "versions"}}
	f.GetLive(t, live)
	if diff := cmp.Diff(map[string]string{"version": "1.10"}, live.Data); diff != "" {
		t.Errorf("data after the repair (-want +got):\n%s", diff)
	}
}

// managedFieldsOf returns the FieldsV1 JSON our field manager owns through Apply.
func managedFieldsOf(t *testing.T, obj client.Object, manager string) string {
	t.Helper()
	for _, e := range obj.GetManagedFields() {
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && e.FieldsV1 != nil {
			return string(e.FieldsV1.Raw)
		}
	}
	t.Fatalf("no Apply entry for manager %q in %v", manager, obj.GetManagedFields())
	return ""
}

func TestIntegrationApplyOwnsOnlyWhatItSets(t *testing.T) {
	f := fixture.New(t)
	a := f.Applier(apply.WithFieldManager("convergo-test"))
	f.MustApply(t, a, fixture.Deployment("web"), apply.OperationCreated)
	live := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	f.GetLive(t, live)
	fields := managedFieldsOf(t, live, "convergo-test")
	t.Logf("fields owned by our manager: %s", fields)

	var tree map[string]any
	if err := json.Unmarshal([]byte(fields), &tree); err != nil {
		t.Fatal(err)
	}
	for _, unwanted := range []string{`"f:creationTimestamp"`, `"f:status"`, `"f:resources"`, `"f:replicas"`, `"f:strategy"`,
		`"f:imagePullPolicy"`, `"f:terminationMessagePath"`, `"f:revisionHistoryLimit"`} {
		if strings.Contains(fields, unwanted) {
			t.Errorf("our field manager owns %s, which we never set:\n%s", unwanted, fields)
		}
	}
	for _, wanted := range []string{`"f:selector"`, `"f:image"`, `"f:ownerReferences"`, `"f:convergo.dev/intent-hash"`, `"f:convergo.dev/owner-uid"`} {
		if !strings.Contains(fields, wanted) {
			t.Errorf("our field manager does not own %s:\n%s", wanted, fields)
		}
	}
}

func TestIntegrationApplyNeverSteals(t *testing.T) {
	f := fixture.New(t)
	other := f.NewOwner(t, "other")

	// A Deployment controlled by another owner.
	if _, _, err := f.Applier().Apply(t.Context(), other, fixture.Deployment("taken")); err != nil {
		t.Fatal(err)
	}
	taken := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "taken"}}
	f.GetLive(t, taken)
	f.WaitCached(t, taken)
	f.Counter.Reset()
	_, _, err := f.Applier(apply.WithAdoptOrphans()).Apply(t.Context(), f.Owner, fixture.Deployment("taken"))
	var owned *ownership.AlreadyOwnedError
	if !errors.As(err, &owned) {
		t.Fatalf("apply over another owner's child: %v, want *ownership.AlreadyOwnedError", err)
	}
	for _, want := range []string{"ConfigMap " + f.NS + "/other", string(other.UID), "ConfigMap " + f.NS + "/owner", string(f.Owner.UID), "Deployment " + f.NS + "/taken"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if n := f.Counter.Snapshot().Writes(); n != 0 {
		t.Errorf("%d writes despite the refusal", n)
	}

	// An orphan: created by someone else, no controller.
	orphan := fixture.Deployment("orphan")
	orphan.Namespace = f.NS
	if err := f.Env.Client.Create(t.Context(), orphan); err != nil {
		t.Fatal(err)
	}
	f.WaitCached(t, orphan)
	_, _, err = f.Applier().Apply(t.Context(), f.Owner, fixture.Deployment("orphan"))
	var orphanErr *apply.OrphanError
	if !errors.As(err, &orphanErr) || !strings.Contains(err.Error(), "WithAdoptOrphans") {
		t.Fatalf("apply over an orphan: %v, want *apply.OrphanError naming the option", err)
	}
	f.MustApply(t, f.Applier(apply.WithAdoptOrphans()), fixture.Deployment("orphan"), apply.OperationUpdated)
	f.GetLive(t, orphan)
	if !ownership.IsControlledBy(orphan, f.Owner) {
		t.Errorf("adopted orphan not controlled by the owner: %v", orphan.OwnerReferences)
	}
}

func TestIntegrationApplyImmutableSelector(t *testing.T) {
	f := fixture.New(t)
	f.MustApply(t, f.Applier(), fixture.Deployment("web"), apply.OperationCreated)
	before := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	f.GetLive(t, before)

	relabel := func(d *appsv1.Deployment) {
		d.Spec.Selector.MatchLabels = map[string]string{"app": "web", "v": "2"}
		d.Spec.Template.Labels = map[string]string{"app": "web", "v": "2"}
	}
	_, _, err := f.Applier().Apply(t.Context(), f.Owner, fixture.Deployment("web", relabel))
	var immutable *apply.ImmutableFieldError
	if !errors.As(err, &immutable) {
		t.Fatalf("selector change: %v, want *apply.ImmutableFieldError", err)
	}
	if !strings.Contains(err.Error(), "spec.selector") || !strings.Contains(err.Error(), "WithRecreateOnImmutable") {
		t.Errorf("error %q does not name the field and the option", err)
	}

	live := f.MustApply(t, f.Applier(apply.WithRecreateOnImmutable()), fixture.Deployment("web", relabel), apply.OperationRecreated)
	if live == nil {
		t.Fatal("recreated Deployment not returned (the old one was deleted synchronously)")
	}
	after := live.(*appsv1.Deployment)
	if after.UID == before.UID {
		t.Errorf("UID unchanged after recreate")
	}
	if after.Spec.Selector.MatchLabels["v"] != "2" {
		t.Errorf("selector = %v, want the new one", after.Spec.Selector.MatchLabels)
	}
	if _, op, err := f.Applier(apply.WithRecreateOnImmutable()).Apply(t.Context(), f.Owner, fixture.Deployment("web", relabel)); err != nil || op != apply.OperationUnchanged {
		t.Errorf("apply after recreate: %s, %v; want Unchanged", op, err)
	}
}

// TestIntegrationApplyFunc checks the controllerutil-style variant.
func TestIntegrationApplyFunc(t *testing.T) {
	f := fixture.New(t)
	a := f.Applier()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.NS}}
	mutate := func() error {
		d.Spec = fixture.Deployment("web").Spec
		return nil
	}
	op, err := a.ApplyFunc(t.Context(), f.Owner, d, mutate)
	if err != nil || op != apply.OperationCreated {
		t.Fatalf("ApplyFunc: %s, %v; want Created", op, err)
	}
	if d.UID == "" || d.Spec.Replicas == nil {
		t.Errorf("ApplyFunc did not leave the live object in obj: uid %q replicas %v", d.UID, d.Spec.Replicas)
	}
	f.WaitCached(t, d)
	f.Counter.Reset()
	for range 3 {
		if op, err := a.ApplyFunc(t.Context(), f.Owner, d, mutate); err != nil || op != apply.OperationUnchanged {
			t.Fatalf("ApplyFunc again: %s, %v; want Unchanged", op, err)
		}
	}
	if n := f.Counter.Snapshot().Writes(); n != 0 {
		t.Errorf("%d writes for an unchanged ApplyFunc, want 0", n)
	}
}

// TestIntegrationApplyDropsOldOwnerMarks: a child written by an earlier Convergo, whose tracking named
// the owner in four more labels and annotations beside its owner reference, loses them with the next
// apply (server-side apply removes what the field manager no longer applies), keeps its UID label and
// owner reference, still names its owner, and then holds the intent without a write.
func TestIntegrationApplyDropsOldOwnerMarks(t *testing.T) {
	f := fixture.New(t)
	old := fixture.Deployment("web", func(d *appsv1.Deployment) {
		d.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
		d.Namespace = f.NS
		d.Labels = map[string]string{ownership.OwnerUIDLabel: string(f.Owner.UID), marks.OwnerKind: "ConfigMap"}
		d.Annotations = map[string]string{marks.OwnerName: f.Owner.Name, marks.OwnerNamespace: f.NS}
		d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: f.Owner.Name, UID: f.Owner.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	})
	if err := f.Env.Client.Patch(t.Context(), old, client.Apply, client.FieldOwner("convergo"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}

	f.MustApply(t, f.Applier(), fixture.Deployment("web"), apply.OperationUpdated)
	live := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	f.GetLive(t, live)
	only := func(m map[string]string, keys ...string) map[string]string {
		out := map[string]string{}
		for _, k := range keys {
			if v, ok := m[k]; ok {
				out[k] = v
			}
		}
		return out
	}
	if diff := cmp.Diff(map[string]string{ownership.OwnerUIDLabel: string(f.Owner.UID)},
		only(live.Labels, ownership.OwnerUIDLabel, marks.OwnerKind, marks.OwnerGroup)); diff != "" {
		t.Errorf("tracking labels after the apply (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{}, only(live.Annotations, marks.OwnerName, marks.OwnerNamespace)); diff != "" {
		t.Errorf("tracking annotations after the apply (-want +got):\n%s", diff)
	}
	got, ok := ownership.TrackedOwner(live)
	want := ownership.Reference{Kind: "ConfigMap", Namespace: f.NS, Name: f.Owner.Name, UID: f.Owner.UID}
	if diff := cmp.Diff(want, got); diff != "" || !ok {
		t.Errorf("TrackedOwner = _, %t (-want +got):\n%s", ok, diff)
	}

	f.Counter.Reset()
	f.MustApply(t, f.Applier(), fixture.Deployment("web"), apply.OperationUnchanged)
	if n := f.Counter.Snapshot().Writes(); n != 0 {
		t.Errorf("%d writes once the marks are gone, want 0:\n%s", n, f.Counter.Snapshot())
	}
}

// TestIntegrationApplierWithConnection: with apply.WithConnection the Applier sends its DELETEs itself
// over the manager's connection, so the API server's answer (200) says the child was removed at once
// and one Delete pass finds it gone; through the client the answer cannot tell, and the pass waits for
// the cache (or a read) to confirm it.
func TestIntegrationApplierWithConnection(t *testing.T) {
	cases := map[string]struct {
		opts     []apply.Option
		wantGone bool
	}{
		"through the client":            {},
		"without a connection to use":   {opts: []apply.Option{apply.WithConnection(nil, nil)}},
		"over the manager's connection": {wantGone: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := fixture.New(t)
			opts := tc.opts
			if tc.wantGone {
				opts = []apply.Option{apply.WithConnection(f.Mgr.GetConfig(), f.Mgr.GetHTTPClient())}
			}
			a := f.Applier(opts...)
			desired := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child"}, Data: map[string]string{"k": "v"}}
			f.MustApply(t, a, desired, apply.OperationCreated)
			step, err := a.Delete(t.Context(), f.Owner, desired)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]bool{true, tc.wantGone}, []bool{step.Sent != nil, step.Live == nil}); diff != "" {
				t.Errorf("[DELETE sent, gone after one pass] (-want +got):\n%s", diff)
			}
		})
	}
}
