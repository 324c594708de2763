package reconcile

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestLeanCache(t *testing.T) {
	cases := map[string]struct {
		opts func() cache.Options
		// calls: LeanCache is called once per entry with these kinds.
		calls [][]client.Object
		// want: the label selector of each kind's entry, and its namespaces.
		want map[string]string
	}{
		"nothing set": {
			opts:  func() cache.Options { return cache.Options{} },
			calls: [][]client.Object{{&corev1.ConfigMap{}, &appsv1.Deployment{}}},
			want:  map[string]string{"*v1.ConfigMap": "convergo.dev/owner-uid", "*v1.Deployment": "convergo.dev/owner-uid"},
		},
		"an entry's own selector and namespaces are kept": {
			opts: func() cache.Options {
				return cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {
					Label: labels.SelectorFromSet(labels.Set{"team": "a"}), Namespaces: map[string]cache.Config{"ns": {}}}}}
			},
			calls: [][]client.Object{{&corev1.ConfigMap{}}},
			want:  map[string]string{"*v1.ConfigMap": "convergo.dev/owner-uid,team=a ns"},
		},
		"the default selector is combined": {
			opts: func() cache.Options {
				return cache.Options{DefaultLabelSelector: labels.SelectorFromSet(labels.Set{"env": "prod"})}
			},
			calls: [][]client.Object{{&corev1.Service{}}},
			want:  map[string]string{"*v1.Service": "convergo.dev/owner-uid,env=prod"},
		},
		"two controllers of one manager list the same kind": {
			opts:  func() cache.Options { return cache.Options{} },
			calls: [][]client.Object{{&appsv1.Deployment{}}, {&appsv1.Deployment{}, &corev1.Service{}}},
			want:  map[string]string{"*v1.Deployment": "convergo.dev/owner-uid", "*v1.Service": "convergo.dev/owner-uid"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			opts := tc.opts()
			for _, kinds := range tc.calls {
				LeanCache(&opts, kinds...)
			}
			got := map[string]string{}
			for k, v := range opts.ByObject {
				s := v.Label.String()
				for ns := range v.Namespaces {
					s += " " + ns
				}
				got[fmt.Sprintf("%T", k)] = s
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ByObject (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLeanCacheTransform: managedFields are dropped, then an existing transform runs.
func TestLeanCacheTransform(t *testing.T) {
	opts := cache.Options{DefaultTransform: func(in any) (any, error) {
		in.(*corev1.ConfigMap).Labels = map[string]string{"seen-by": "user transform"}
		return in, nil
	}}
	LeanCache(&opts)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
	out, err := opts.DefaultTransform(cm)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.ConfigMap)
	if diff := cmp.Diff([]any{0, map[string]string{"seen-by": "user transform"}}, []any{len(got.ManagedFields), got.Labels}); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestLeanCacheSharesStrings: two objects decoded apart hold one copy of the strings they repeat once
// the cache's transform ran (label keys too: their maps' keys are replaced in place), their own UIDs
// untouched, and their applied-intent digests and condition messages as they were decoded.
func TestLeanCacheSharesStrings(t *testing.T) {
	var opts cache.Options
	LeanCache(&opts, &corev1.ConfigMap{})
	decoded := func(uid string) *appsv1.Deployment {
		// strings.Clone: each object gets its own copies, as a decoder gives it.
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
			Name: strings.Clone("web"), Namespace: strings.Clone("team-a"), UID: types.UID(strings.Clone(uid)),
			Labels: map[string]string{strings.Clone("app.kubernetes.io/name"): strings.Clone("welcome"),
				strings.Clone(LabelAppliedIntent): strings.Clone("0123456789abcdef0123.0123456789abcdef0123.0123456789abcdef0123")},
			OwnerReferences: []metav1.OwnerReference{{Kind: strings.Clone("Welcome"), Name: strings.Clone("web"), UID: types.UID(strings.Clone("owner-uid"))}},
		}}
		d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Reason: strings.Clone("MinimumReplicasAvailable"),
			Message: strings.Clone("Deployment has minimum availability.")}}
		return d
	}
	var objs []*appsv1.Deployment
	for _, uid := range []string{"uid-1", "uid-2"} {
		out, err := opts.DefaultTransform(decoded(uid))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, out.(*appsv1.Deployment))
	}
	a, b := objs[0], objs[1]
	labelKey := func(d *appsv1.Deployment) string {
		for k := range d.Labels {
			if k != LabelAppliedIntent {
				return k
			}
		}
		return ""
	}
	shared := map[string][2]string{
		"namespace":        {a.Namespace, b.Namespace},
		"label key":        {labelKey(a), labelKey(b)},
		"label value":      {a.Labels[labelKey(a)], b.Labels[labelKey(b)]},
		"owner kind":       {a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind},
		"owner UID":        {string(a.OwnerReferences[0].UID), string(b.OwnerReferences[0].UID)},
		"condition reason": {a.Status.Conditions[0].Reason, b.Status.Conditions[0].Reason},
	}
	// Strings written for their own object are left as decoded, out of the table, even when two
	// objects happen to repeat them.
	own := map[string][2]string{
		"applied intent":    {a.Labels[LabelAppliedIntent], b.Labels[LabelAppliedIntent]},
		"condition message": {a.Status.Conditions[0].Message, b.Status.Conditions[0].Message},
	}
	got := map[string]bool{}
	want := map[string]bool{}
	for what, s := range shared {
		got[what] = unsafe.StringData(s[0]) == unsafe.StringData(s[1])
		want[what] = true
	}
	for what, s := range own {
		got[what] = unsafe.StringData(s[0]) == unsafe.StringData(s[1])
		want[what] = false
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("strings shared (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"uid-1", "uid-2"}, []string{string(a.UID), string(b.UID)}); diff != "" {
		t.Errorf("UIDs (-want +got):\n%s", diff)
	}
}
