package ownership

import (
	"strings"
	"testing"

	"github.com/convergo-dev/convergo/internal/marks"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// labelValueCases are label values at the edges of the rule, for isLabelValue's tests.
var labelValueCases = map[string]bool{
	"":                        true,
	"a":                       true,
	"Z9":                      true,
	"apps":                    true,
	"example.com":             true,
	"a-b_c.d":                 true,
	"0f5c8a34-1d2b-4c6e-9f70": true,
	strings.Repeat("a", 63):   true,
	strings.Repeat("a", 64):   false,
	"-a":                      false,
	"a-":                      false,
	".":                       false,
	"_a":                      false,
	"a b":                     false,
	"a/b":                     false,
	"ä":                       false,
	"a\x00":                   false,
}

// TestIsLabelValue checks isLabelValue against the cases' expectations and against apimachinery's
// validation.IsValidLabelValue, which it must agree with everywhere.
func TestIsLabelValue(t *testing.T) {
	for v, want := range labelValueCases {
		t.Run(v, func(t *testing.T) {
			got := isLabelValue(v)
			apimachinery := len(validation.IsValidLabelValue(v)) == 0
			if diff := cmp.Diff([2]bool{want, want}, [2]bool{got, apimachinery}); diff != "" {
				t.Errorf("isLabelValue(%q), validation.IsValidLabelValue(%q) == nil (-want +got):\n%s", v, v, diff)
			}
		})
	}
}

// FuzzIsLabelValue checks that isLabelValue and validation.IsValidLabelValue agree on any string.
func FuzzIsLabelValue(f *testing.F) {
	for v := range labelValueCases {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got, want := isLabelValue(v), len(validation.IsValidLabelValue(v)) == 0; got != want {
			t.Errorf("isLabelValue(%q) = %t, validation.IsValidLabelValue says %t", v, got, want)
		}
	})
}

// TestTrackInvalidLabelValue checks that an owner whose group cannot be a label value is refused with
// a message naming the label and the rule, and that the child is left as it was.
func TestTrackInvalidLabelValue(t *testing.T) {
	group := strings.Repeat("g", 60) + ".example.com"
	owner := &unstructured.Unstructured{}
	owner.SetAPIVersion(group + "/v1")
	owner.SetKind("App")
	owner.SetName("a")
	owner.SetNamespace("ns")
	owner.SetUID("uid-a")
	c := child("ns")
	c.Labels = map[string]string{"keep": "me"}
	err := Track(owner, c, scheme(t))
	if err == nil {
		t.Fatal("Track by an owner whose group is 72 characters long succeeded")
	}
	for _, want := range []string{marks.OwnerGroup, "63"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if diff := cmp.Diff(map[string]string{"keep": "me"}, c.Labels); diff != "" {
		t.Errorf("labels after a refused Track (-want +got):\n%s", diff)
	}
}

// TestTrackLeavesSharedMaps checks that Track gives the child maps of its own: a labels map the
// child shares with another object (a Deployment's selector, say) is not changed.
func TestTrackLeavesSharedMaps(t *testing.T) {
	shared := map[string]string{"app": "web"}
	annotations := map[string]string{"note": "kept"}
	c := child("ns")
	c.ObjectMeta = metav1.ObjectMeta{Namespace: "ns", Name: "child", Labels: shared, Annotations: annotations}
	if err := Track(app("ns", "a"), c, scheme(t)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"app": "web"}, shared); diff != "" {
		t.Errorf("shared labels map after Track (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"note": "kept"}, annotations); diff != "" {
		t.Errorf("shared annotations map after Track (-want +got):\n%s", diff)
	}
	want := map[string]string{"app": "web", OwnerUIDLabel: "uid-a", marks.OwnerKind: "Deployment", marks.OwnerGroup: "apps"}
	if diff := cmp.Diff(want, c.Labels); diff != "" {
		t.Errorf("child's labels (-want +got):\n%s", diff)
	}
}

// BenchmarkTrack is Track of a labelled child, which the Applier does for every child of every
// reconcile.
func BenchmarkTrack(b *testing.B) {
	s := scheme(b)
	owner := app("ns", "a")
	labels := map[string]string{"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": "a"}
	b.ReportAllocs()
	for b.Loop() {
		c := child("ns")
		c.Labels = labels
		if err := Track(owner, c, s); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTrackForms checks which marks Track sets: only the UID label on a child whose owner reference
// to the owner, in the owner's namespace, names the owner already, every mark otherwise; stale marks
// of the other form are removed, and TrackedOwner reads the same owner back from either form.
func TestTrackForms(t *testing.T) {
	s := scheme(t)
	owner := app("ns", "a")
	clusterOwner := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "uid-team"}}
	stale := func(c *corev1.ConfigMap) *corev1.ConfigMap {
		c.Labels = map[string]string{"keep": "me", marks.OwnerKind: "Old", marks.OwnerGroup: "old.example.com"}
		c.Annotations = map[string]string{marks.OwnerName: "old", marks.OwnerNamespace: "old"}
		return c
	}
	controlled := func(o client.Object, c *corev1.ConfigMap) *corev1.ConfigMap {
		if err := SetController(o, c, s); err != nil {
			t.Fatal(err)
		}
		return c
	}
	full := map[string]string{"keep": "me", OwnerUIDLabel: "uid-a", marks.OwnerKind: "Deployment", marks.OwnerGroup: "apps"}
	cases := map[string]struct {
		owner           client.Object
		child           *corev1.ConfigMap
		wantLabels      map[string]string
		wantAnnotations map[string]string
		wantOwner       Reference
	}{
		"controlled in the owner's namespace: the UID label only": {
			owner: owner, child: controlled(owner, stale(child("ns"))),
			wantLabels: map[string]string{"keep": "me", OwnerUIDLabel: "uid-a"},
			wantOwner:  Reference{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "a", UID: "uid-a"},
		},
		"no owner reference: every mark": {
			owner: owner, child: stale(child("ns")),
			wantLabels: full, wantAnnotations: map[string]string{marks.OwnerName: "a", marks.OwnerNamespace: "ns"},
			wantOwner: Reference{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "a", UID: "uid-a"},
		},
		"another owner's reference: every mark": {
			owner: owner, child: controlled(app("ns", "b"), stale(child("ns"))),
			wantLabels: full, wantAnnotations: map[string]string{marks.OwnerName: "a", marks.OwnerNamespace: "ns"},
			wantOwner: Reference{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "a", UID: "uid-a"},
		},
		"cluster-scoped owner: every mark, since the reference cannot tell its scope": {
			owner: clusterOwner, child: controlled(clusterOwner, stale(child("ns"))),
			wantLabels:      map[string]string{"keep": "me", OwnerUIDLabel: "uid-team", marks.OwnerKind: "Namespace"},
			wantAnnotations: map[string]string{marks.OwnerName: "team"},
			wantOwner:       Reference{Kind: "Namespace", Name: "team", UID: "uid-team"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := Track(tc.owner, tc.child, s); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantLabels, tc.child.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAnnotations, tc.child.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			got, ok := TrackedOwner(tc.child)
			if diff := cmp.Diff(tc.wantOwner, got); diff != "" || !ok {
				t.Errorf("TrackedOwner = _, %t (-want +got):\n%s", ok, diff)
			}
		})
	}
}

// TestTrackedOwnerWithoutName checks that a child carrying only the UID label is not tracked unless an
// owner reference with that UID names the owner.
func TestTrackedOwnerWithoutName(t *testing.T) {
	cases := map[string]*corev1.ConfigMap{
		"no owner reference": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Labels: map[string]string{OwnerUIDLabel: "uid-a"}}},
		"a reference with another UID": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Labels: map[string]string{OwnerUIDLabel: "uid-a"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "b", UID: "uid-b"}}}},
		"cluster-scoped child": {ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{OwnerUIDLabel: "uid-a"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "a", UID: "uid-a"}}}},
		"a reference without a valid API version": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Labels: map[string]string{OwnerUIDLabel: "uid-a"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "a/b/c", Kind: "Deployment", Name: "a", UID: "uid-a"}}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if ref, ok := TrackedOwner(c); ok {
				t.Errorf("TrackedOwner = %v, true; want not tracked", ref)
			}
		})
	}
}
