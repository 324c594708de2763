package ownership

import (
	"errors"
	"strings"
	"testing"

	"github.com/convergo-dev/convergo/internal/marks"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func scheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func app(ns, name string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}}
}

func child(ns string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child"}}
}

func TestSetController(t *testing.T) {
	s := scheme(t)
	wantRef := metav1.OwnerReference{
		APIVersion: "apps/v1", Kind: "Deployment", Name: "a", UID: "uid-a",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
	cases := map[string]struct {
		owner    client.Object
		child    client.Object
		wantRefs []metav1.OwnerReference
		wantErr  error  // errors.Is target
		wantMsg  string // substring of the error
	}{
		"same namespace": {
			owner: app("ns", "a"), child: child("ns"),
			wantRefs: []metav1.OwnerReference{wantRef},
		},
		"cluster-scoped owner of a namespaced child": {
			owner: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "uid-r"}}, child: child("ns"),
			wantRefs: []metav1.OwnerReference{{
				APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "r", UID: "uid-r",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		"idempotent": {
			owner: app("ns", "a"),
			child: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "child",
				OwnerReferences: []metav1.OwnerReference{wantRef}}},
			wantRefs: []metav1.OwnerReference{wantRef},
		},
		"keeps other non-controller references, replaces a stale one to the same name": {
			owner: app("ns", "a"),
			child: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "child",
				OwnerReferences: []metav1.OwnerReference{
					{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "uid-other"},
					{APIVersion: "apps/v1", Kind: "Deployment", Name: "a", UID: "old-uid"},
				}}},
			wantRefs: []metav1.OwnerReference{
				{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "uid-other"},
				wantRef,
			},
		},
		"cross-namespace": {
			owner: app("ns", "a"), child: child("elsewhere"),
			wantErr: ErrCrossNamespace,
			wantMsg: `put the child in namespace "ns", or use ownership.Track`,
		},
		"namespaced owner, cluster-scoped child": {
			owner: app("ns", "a"), child: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r"}},
			wantErr: ErrClusterScopedChild,
			wantMsg: "use ownership.Track and a finalizer on the owner",
		},
		"owner without UID": {
			owner: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}, child: child("ns"),
			wantMsg: "has no UID",
		},
		"already controlled by another owner": {
			owner: app("ns", "a"),
			child: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "child",
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "b", UID: "uid-b", Controller: ptr.To(true)}}}},
			wantMsg: "ConfigMap ns/child is already controlled by Deployment.apps ns/b (uid uid-b), not by Deployment.apps ns/a (uid uid-a)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := SetController(tc.owner, tc.child, s)
			if tc.wantMsg == "" {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.wantRefs, tc.child.GetOwnerReferences()); diff != "" {
					t.Errorf("owner references (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("SetController = %v, want an error containing %q", err, tc.wantMsg)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("SetController = %v, want errors.Is %v", err, tc.wantErr)
			}
		})
	}
}

func TestAlreadyOwnedErrorAs(t *testing.T) {
	c := child("ns")
	if err := SetController(app("ns", "b"), c, scheme(t)); err != nil {
		t.Fatal(err)
	}
	err := SetController(app("ns", "a"), c, scheme(t))
	var owned *AlreadyOwnedError
	if !errors.As(err, &owned) {
		t.Fatalf("SetController = %v, want *AlreadyOwnedError", err)
	}
	want := &AlreadyOwnedError{
		Child:   Reference{Kind: "ConfigMap", Namespace: "ns", Name: "child"},
		Owner:   Reference{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "a", UID: "uid-a"},
		Current: Reference{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "b", UID: "uid-b"},
	}
	if diff := cmp.Diff(want, owned); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
	if err := CheckControllable(app("ns", "b"), c, scheme(t)); err != nil {
		t.Errorf("CheckControllable by the controller itself = %v", err)
	}
	if !IsControlledBy(c, app("ns", "b")) || IsControlledBy(c, app("ns", "a")) {
		t.Error("IsControlledBy does not follow the controller reference")
	}
}

func TestTrack(t *testing.T) {
	s := scheme(t)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r", Labels: map[string]string{"keep": "me"}}}
	owner := app("ns", "a")
	if err := Track(owner, role, s); err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{"keep": "me", OwnerUIDLabel: "uid-a", marks.OwnerKind: "Deployment", marks.OwnerGroup: "apps"}
	if diff := cmp.Diff(wantLabels, role.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	wantAnns := map[string]string{marks.OwnerName: "a", marks.OwnerNamespace: "ns"}
	if diff := cmp.Diff(wantAnns, role.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if !IsTrackedBy(role, owner) || IsTrackedBy(role, app("ns", "b")) {
		t.Error("IsTrackedBy does not follow the UID label")
	}
	ref, ok := TrackedOwner(role)
	if !ok || ref != (Reference{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "a", UID: "uid-a"}) {
		t.Errorf("TrackedOwner = %+v, %v", ref, ok)
	}
	if _, ok := TrackedOwner(child("ns")); ok {
		t.Error("untracked object has a tracked owner")
	}

	// A core-group, cluster-scoped owner: no group label, no namespace annotation.
	nsOwner := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "uid-team"}}
	c := child("team")
	c.Annotations = map[string]string{marks.OwnerNamespace: "stale"}
	if err := Track(nsOwner, c, s); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Labels[marks.OwnerGroup]; ok {
		t.Errorf("core owner got a group label: %v", c.Labels)
	}
	if _, ok := c.Annotations[marks.OwnerNamespace]; ok {
		t.Errorf("cluster-scoped owner left a namespace annotation: %v", c.Annotations)
	}
	if err := Track(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, c, s); err == nil {
		t.Error("Track by an owner without UID succeeded")
	}
}

func TestEnqueueTrackedOwner(t *testing.T) {
	s := scheme(t)
	tracked := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r"}}
	if err := Track(app("ns", "a"), tracked, s); err != nil {
		t.Fatal(err)
	}
	byService := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r2"}}
	if err := Track(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "u"}}, byService, s); err != nil {
		t.Fatal(err)
	}
	controlled := child("ns")
	if err := SetController(app("ns", "a"), controlled, s); err != nil {
		t.Fatal(err)
	}
	if err := Track(app("ns", "a"), controlled, s); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		obj  client.Object
		want []ctrlreconcile.Request
	}{
		"tracked by a Deployment":                        {obj: tracked, want: []ctrlreconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}}},
		"controlled by a Deployment, the UID label only": {obj: controlled, want: []ctrlreconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}}},
		"tracked by another kind":                        {obj: byService},
		"untracked":                                      {obj: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r3"}}},
	}
	h := EnqueueTrackedOwner(&appsv1.Deployment{}, s)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[ctrlreconcile.Request]())
			defer q.ShutDown()
			h.Create(t.Context(), event.CreateEvent{Object: tc.obj}, q)
			var got []ctrlreconcile.Request
			for q.Len() > 0 {
				r, _ := q.Get()
				got = append(got, r)
				q.Done(r)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEnqueueTrackedOwnerReferenceRemoved checks that the update which takes the owner reference off a
// child tracked by its UID label alone still wakes the owner: the old object names it.
func TestEnqueueTrackedOwnerReferenceRemoved(t *testing.T) {
	s := scheme(t)
	old := child("ns")
	if err := SetController(app("ns", "a"), old, s); err != nil {
		t.Fatal(err)
	}
	if err := Track(app("ns", "a"), old, s); err != nil {
		t.Fatal(err)
	}
	stripped := old.DeepCopy()
	stripped.OwnerReferences = nil
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[ctrlreconcile.Request]())
	defer q.ShutDown()
	EnqueueTrackedOwner(&appsv1.Deployment{}, s).Update(t.Context(), event.UpdateEvent{ObjectOld: old, ObjectNew: stripped}, q)
	var got []ctrlreconcile.Request
	for q.Len() > 0 {
		r, _ := q.Get()
		got = append(got, r)
		q.Done(r)
	}
	if diff := cmp.Diff([]ctrlreconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}}, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}
