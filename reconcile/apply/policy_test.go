package apply

import (
	"testing"

	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile/internal/applytest"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestDeletionPolicyStrongerWins(t *testing.T) {
	withPolicy := func(v string) client.Object {
		o := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"}}
		if v != "" {
			o.Annotations = map[string]string{DeletionPolicyAnnotation: v}
		}
		return o
	}
	cases := []struct {
		node, live string
		want       deletionPolicy
		prop       metav1.DeletionPropagation
	}{
		{"", "", policyBackground, metav1.DeletePropagationBackground},
		{"background", "", policyBackground, metav1.DeletePropagationBackground},
		{"foreground", "", policyForeground, metav1.DeletePropagationForeground},
		{"", "foreground", policyForeground, metav1.DeletePropagationForeground},
		{"keep", "foreground", policyKeep, metav1.DeletePropagationBackground},
		{"", "keep", policyKeep, metav1.DeletePropagationBackground},
		{"bogus", "", policyBackground, metav1.DeletePropagationBackground},
	}
	for _, tc := range cases {
		got := policyOf(withPolicy(tc.node)).or(policyOf(withPolicy(tc.live)))
		if got != tc.want || got.propagation() != tc.prop {
			t.Errorf("node %q, live %q: policy %d (%s), want %d (%s)", tc.node, tc.live, got, got.propagation(), tc.want, tc.prop)
		}
	}
	if policyOf(nil) != policyBackground || policyOf((*corev1.ConfigMap)(nil)) != policyBackground {
		t.Error("a nil object has a policy")
	}
}

func TestReleasePatch(t *testing.T) {
	app := applytest.Owner("app")
	ref := func(uid string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: uid, UID: types.UID(uid), Controller: ptr.To(controller)}
	}
	tracked := func(o *corev1.ConfigMap) *corev1.ConfigMap {
		if err := ownership.Track(app, o, applytest.Scheme(t)); err != nil {
			t.Fatal(err)
		}
		return o
	}
	child := func(refs ...metav1.OwnerReference) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "uid-c", OwnerReferences: refs,
			Annotations: map[string]string{DeletionPolicyAnnotation: "keep", "convergo.dev/node": "data", "example.com/note": "stays"}}}
	}
	cases := map[string]struct {
		live client.Object
		want string
	}{
		"tracked, no owner reference": {live: tracked(child()),
			want: `[{"op":"test","path":"/metadata/uid","value":"uid-c"},` +
				`{"op":"test","path":"/metadata/labels/convergo.dev~1owner-kind","value":"ConfigMap"},{"op":"remove","path":"/metadata/labels/convergo.dev~1owner-kind"},` +
				`{"op":"test","path":"/metadata/labels/convergo.dev~1owner-uid","value":"uid-app"},{"op":"remove","path":"/metadata/labels/convergo.dev~1owner-uid"},` +
				`{"op":"test","path":"/metadata/annotations/convergo.dev~1deletion-policy","value":"keep"},{"op":"remove","path":"/metadata/annotations/convergo.dev~1deletion-policy"},` +
				`{"op":"test","path":"/metadata/annotations/convergo.dev~1node","value":"data"},{"op":"remove","path":"/metadata/annotations/convergo.dev~1node"},` +
				`{"op":"test","path":"/metadata/annotations/convergo.dev~1owner-name","value":"app"},{"op":"remove","path":"/metadata/annotations/convergo.dev~1owner-name"},` +
				`{"op":"test","path":"/metadata/annotations/convergo.dev~1owner-namespace","value":"ns"},{"op":"remove","path":"/metadata/annotations/convergo.dev~1owner-namespace"}]`},
		"controlled and another owner's reference kept": {live: child(ref("other", false), ref("uid-app", true)),
			want: `[{"op":"test","path":"/metadata/uid","value":"uid-c"},` +
				`{"op":"test","path":"/metadata/ownerReferences/1/uid","value":"uid-app"},{"op":"remove","path":"/metadata/ownerReferences/1"}]`},
		"nothing of the owner's left": {live: child(ref("other", true))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := releasePatch(tc.live, app)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}
