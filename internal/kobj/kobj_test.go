package kobj

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestDescribe(t *testing.T) {
	thing := &unstructured.Unstructured{}
	thing.SetAPIVersion("example.com/v1")
	thing.SetKind("Thing")
	thing.SetName("t")
	thing.SetNamespace("ns")
	cases := map[string]struct {
		obj  client.Object
		want string
	}{
		"typed without TypeMeta": {
			obj:  &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}},
			want: "ConfigMap ns/cm",
		},
		"TypeMeta wins": {
			obj: &appsv1.Deployment{
				TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
			},
			want: "Deployment ns/web",
		},
		"cluster-scoped": {
			obj:  &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "reader"}},
			want: "ClusterRole reader",
		},
		"unstructured": {obj: thing, want: "Thing ns/t"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Describe(tc.obj)); diff != "" {
				t.Errorf("Describe (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewLikeAndCopyInto(t *testing.T) {
	cases := map[string]struct {
		obj    client.Object
		filled client.Object // what a read would put into NewLike's result
	}{
		"typed": {
			obj: &corev1.ConfigMap{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", Labels: map[string]string{"stale": "yes"}},
			},
			filled: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", ResourceVersion: "2"}, Data: map[string]string{"k": "v"}},
		},
		"unstructured": {
			obj: func() client.Object {
				u := &unstructured.Unstructured{}
				u.SetAPIVersion("example.com/v1")
				u.SetKind("Thing")
				u.SetName("t")
				u.SetLabels(map[string]string{"stale": "yes"})
				return u
			}(),
			filled: func() client.Object {
				u := &unstructured.Unstructured{}
				u.SetAPIVersion("example.com/v1")
				u.SetKind("Thing")
				u.SetName("t")
				u.SetResourceVersion("2")
				return u
			}(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := NewLike(tc.obj)
			if out.GetLabels() != nil || out.GetName() != tc.obj.GetName() || out.GetNamespace() != tc.obj.GetNamespace() {
				t.Errorf("NewLike = %+v, want only the name and namespace of %+v", out, tc.obj)
			}
			if diff := cmp.Diff(tc.obj.GetObjectKind().GroupVersionKind(), out.GetObjectKind().GroupVersionKind()); diff != "" {
				t.Errorf("NewLike kind (-want +got):\n%s", diff)
			}
			want := tc.filled.DeepCopyObject().(client.Object)
			want.GetObjectKind().SetGroupVersionKind(tc.obj.GetObjectKind().GroupVersionKind())
			if err := CopyInto(tc.obj, tc.filled); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, tc.obj); diff != "" {
				t.Errorf("after CopyInto (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCopyIntoRefusesOtherTypes(t *testing.T) {
	err := CopyInto(&corev1.ConfigMap{}, &corev1.Secret{})
	if diff := cmp.Diff("cannot copy *v1.Secret into *v1.ConfigMap", errString(err)); diff != "" {
		t.Errorf("CopyInto error (-want +got):\n%s", diff)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
