package reconcile

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// appliedBy returns what the API server holds after manager server-side applied desired without
// LabelAppliedIntent (an earlier Convergo, another tool), so that a cache digests its values: the
// intent, with the managedFields entry that records its fields, and the intent's hash.
func appliedBy(t *testing.T, manager string, desired client.Object) (client.Object, string) {
	t.Helper()
	return appliedAs(t, manager, desired, false)
}

// sealedBy is appliedBy as the Applier applies: with LabelAppliedIntent.
func sealedBy(t *testing.T, manager string, desired client.Object) (client.Object, string) {
	t.Helper()
	return appliedAs(t, manager, desired, true)
}

// appliedAs is appliedBy, with LabelAppliedIntent when labelled.
func appliedAs(t *testing.T, manager string, desired client.Object, labelled bool) (client.Object, string) {
	t.Helper()
	gvk, err := apiutil.GVKForObject(desired, clientgoscheme.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	intent, err := Intent(desired, clientgoscheme.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	hash, err := IntentHash(intent)
	if err != nil {
		t.Fatal(err)
	}
	setIntentHash(intent, hash)
	if labelled {
		intent = withAppliedIntent(intent, gvk, hash, desiredDigest(desired, gvk))
		where := "labels"
		if appliedIntentInAnnotation(gvk.GroupKind()) {
			where = "annotations"
		}
		if _, ok := intent["metadata"].(map[string]any)[where].(map[string]any)[LabelAppliedIntent]; !ok {
			t.Fatalf("no applied intent record in the %s", where)
		}
	}
	// The fields the API server records (TestIntegrationAppliedIntent compares them with its own).
	raw, err := appliedFieldsJSON(intent, gvk)
	if err != nil {
		t.Fatal(err)
	}
	live := desired.DeepCopyObject().(client.Object)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(runtime.DeepCopyJSON(intent), live); err != nil {
		t.Fatal(err)
	}
	live.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{}) // as informers hold typed objects
	live.SetUID("uid-1")
	live.SetManagedFields([]metav1.ManagedFieldsEntry{{
		Manager: manager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: gvk.GroupVersion().String(),
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: raw},
	}})
	return live, hash
}

func slimDeployment() *appsv1.Deployment {
	sel := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: sel,
			Annotations: map[string]string{AnnotationNode: "deployment", "example.com/note": "kept"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1", Args: []string{"--port=8080"},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
			},
		},
	}
}

// TestSlimCacheDigest: the digest a SlimCache keeps equals the intent hash exactly while the fields
// the manager applied hold their values, whatever others add, and differs once one of them changed.
func TestSlimCacheDigest(t *testing.T) {
	cases := map[string]struct {
		desired client.Object
		// change is what happens on the server after the apply (nil: nothing).
		change func(client.Object)
		same   bool
	}{
		"as applied": {desired: slimDeployment(), same: true},
		"server defaults, a sidecar and a foreign env var": {desired: slimDeployment(), same: true, change: func(o client.Object) {
			spec := &o.(*appsv1.Deployment).Spec.Template.Spec
			spec.RestartPolicy, spec.DNSPolicy = corev1.RestartPolicyAlways, corev1.DNSClusterFirst
			spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
			spec.Containers[0].Env = append(spec.Containers[0].Env, corev1.EnvVar{Name: "INJECTED", Value: "1"})
			spec.Containers = append(spec.Containers, corev1.Container{Name: "sidecar", Image: "mesh:1"})
			o.(*appsv1.Deployment).Status.ReadyReplicas = 2
		}},
		"an image changed": {desired: slimDeployment(), change: func(o client.Object) {
			o.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Image = "theirs:1"
		}},
		"an extra argument (atomic list)": {desired: slimDeployment(), change: func(o client.Object) {
			c := &o.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
			c.Args = append(c.Args, "--debug")
		}},
		"replicas changed": {desired: slimDeployment(), change: func(o client.Object) {
			o.(*appsv1.Deployment).Spec.Replicas = ptr.To[int32](5)
		}},
		"a label of ours removed": {desired: slimDeployment(), change: func(o client.Object) {
			o.SetLabels(nil)
		}},
		"a role as applied": {desired: slimRole(), same: true},
		"a role with an extra verb": {desired: slimRole(), change: func(o client.Object) {
			r := o.(*rbacv1.ClusterRole)
			r.Rules[0].Verbs = append(r.Rules[0].Verbs, "delete")
		}},
		"a config map as applied": {desired: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "page", Namespace: "ns"},
			Data: map[string]string{"index.html": "<p>hi</p>"}}, same: true},
		"a config map with a key added by someone": {desired: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "page", Namespace: "ns"},
			Data: map[string]string{"index.html": "<p>hi</p>"}}, same: true, change: func(o client.Object) {
			o.(*corev1.ConfigMap).Data["extra"] = "x"
		}},
		"a config map whose value changed": {desired: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "page", Namespace: "ns"},
			Data: map[string]string{"index.html": "<p>hi</p>"}}, change: func(o client.Object) {
			o.(*corev1.ConfigMap).Data["index.html"] = "<p>defaced</p>"
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			live, hash := appliedBy(t, "convergo", tc.desired)
			if tc.change != nil {
				tc.change(live)
			}
			opts := cache.Options{}
			SlimCache(&opts, tc.desired)
			transform := opts.ByObject[tc.desired].Transform
			out, err := transform(live)
			if err != nil {
				t.Fatal(err)
			}
			digest, _, slimmed := appliedDigest(out.(client.Object), "convergo")
			if !slimmed {
				t.Fatalf("not slimmed: %v", out.(client.Object).GetAnnotations())
			}
			if got := digest == hash[:digestLen]; got != tc.same {
				t.Errorf("digest %s, intent hash %s: same = %t, want %t", digest, hash[:digestLen], got, tc.same)
			}
		})
	}
}

func slimRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "role"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}}
}

// TestSlimCacheKeeps: a slim copy keeps metadata (but managedFields and the node annotations), status
// and scalars; the transform is idempotent and runs the transform set before it.
func TestSlimCacheKeeps(t *testing.T) {
	live, _ := appliedBy(t, "convergo", slimDeployment())
	live.(*appsv1.Deployment).Status = appsv1.DeploymentStatus{ReadyReplicas: 2, ObservedGeneration: 4}
	live.(*appsv1.Deployment).Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	opts := cache.Options{DefaultTransform: func(in any) (any, error) {
		in.(client.Object).SetLabels(map[string]string{"seen-by": "default-transform"})
		return in, nil
	}}
	SlimCache(&opts, &appsv1.Deployment{})
	var transform toolscache.TransformFunc
	for _, e := range opts.ByObject {
		transform = e.Transform
	}
	out, err := transform(live)
	if err != nil {
		t.Fatal(err)
	}
	again, err := transform(out)
	if err != nil {
		t.Fatal(err)
	}
	got := again.(*appsv1.Deployment)
	digest, _, _ := appliedDigest(got, "convergo")
	want := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1",
			Labels:          map[string]string{"seen-by": "default-transform"},
			Annotations:     map[string]string{"example.com/note": "kept", AnnotationApplied: "convergo=" + digest},
			OwnerReferences: live.GetOwnerReferences()},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
		},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 2, ObservedGeneration: 4},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("slim copy (-want +got):\n%s", diff)
	}
	if len(digest) != digestLen {
		t.Errorf("digest %q: want %d hex digits", digest, digestLen)
	}
}

// TestAppliedDigest reads one manager's digest out of the annotation.
func TestAppliedDigest(t *testing.T) {
	cases := map[string]struct {
		anns        map[string]string
		want        string
		wantSlimmed bool
	}{
		"whole object":      {anns: map[string]string{"a": "b"}},
		"slim, ours":        {anns: map[string]string{AnnotationApplied: "other=1,convergo=2"}, want: "2", wantSlimmed: true},
		"slim, not applied": {anns: map[string]string{AnnotationApplied: ""}, wantSlimmed: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, _, slimmed := appliedDigest(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Annotations: tc.anns}}, "convergo")
			if diff := cmp.Diff([2]any{tc.want, tc.wantSlimmed}, [2]any{d, slimmed}); diff != "" {
				t.Error(diff)
			}
		})
	}
}

// BenchmarkSlimDeployment measures the transform of one Deployment as an informer delivers it: as
// the Applier writes it (LabelAppliedIntent vouches for the intent), and digested from its values
// (an apply without that annotation, or a field taken by someone else since).
func BenchmarkSlimDeployment(b *testing.B) {
	t := &testing.T{}
	sealed, _ := sealedBy(t, "convergo", slimDeployment())
	values, _ := appliedBy(t, "convergo", slimDeployment())
	var opts cache.Options
	SlimCache(&opts, &appsv1.Deployment{})
	var transform toolscache.TransformFunc
	for _, e := range opts.ByObject {
		transform = e.Transform
	}
	for name, live := range map[string]client.Object{"sealed": sealed, "values": values} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				obj := live.DeepCopyObject()
				if _, err := transform(obj); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestApplierRemembersWhatTheServerChanged: the answer to a write may hold another value than the
// intent in a field the Applier applied (an admission webhook pinned the image to a digest). Once the
// Applier has seen that answer, a slim copy with its digest holds the intent: no write at every
// reconcile. Without that answer, the same copy is drift.
func TestApplierRemembersWhatTheServerChanged(t *testing.T) {
	cases := map[string]struct {
		pinned, remembered, want bool
	}{
		"as applied":                    {want: true},
		"as applied, remembered":        {remembered: true, want: true},
		"pinned by the server":          {pinned: true, want: false},
		"pinned, the answer remembered": {pinned: true, remembered: true, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := NewApplier(fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build(), clientgoscheme.Scheme)
			owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "ns", UID: "owner-uid"}}
			c, err := a.newCall(owner, slimDeployment())
			if err != nil {
				t.Fatal(err)
			}
			if err := c.computeIntent(); err != nil {
				t.Fatal(err)
			}
			answer, hash := appliedBy(t, a.FieldManager(), c.obj)
			if hash != c.hash {
				t.Fatalf("intent hash %s, the Applier's %s", hash, c.hash)
			}
			if tc.pinned {
				answer.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Image = "web@sha256:0123"
			}
			if tc.remembered {
				a.remember(c, answer)
			}
			cached := answer.DeepCopyObject().(client.Object)
			slim(cached, appsv1.SchemeGroupVersion.WithKind("Deployment"))
			got, _, err := a.holds(c, cached)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("holds = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestSlimCacheKeepsWhatItCannotDigest: an object whose managedFields cannot be read stays whole, so
// that the Applier judges it field by field (an error would make the informer list again and again).
func TestSlimCacheKeepsWhatItCannotDigest(t *testing.T) {
	live, _ := appliedBy(t, "convergo", slimDeployment())
	live.GetManagedFields()[0].FieldsV1.Raw = []byte(`{"f:spec":`)
	var opts cache.Options
	SlimCache(&opts, &appsv1.Deployment{})
	for _, e := range opts.ByObject {
		out, err := e.Transform(live)
		if err != nil {
			t.Fatal(err)
		}
		d := out.(*appsv1.Deployment)
		_, _, slimmed := appliedDigest(d, "convergo")
		if diff := cmp.Diff([3]any{false, 1, 0}, [3]any{slimmed, len(d.Spec.Template.Spec.Containers), len(d.ManagedFields)}); diff != "" {
			t.Errorf("(slimmed, containers, managedFields) (-want +got):\n%s", diff)
		}
	}
}
