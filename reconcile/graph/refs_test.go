package graph

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// guestbook returns a Deployment that mounts a ConfigMap, takes a Secret's key, runs as a
// ServiceAccount bound to a ClusterRole, and those children, none of them with a declared edge.
func guestbook() map[string]client.Object {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: "ns"} }
	return map[string]client.Object{
		"web": &appsv1.Deployment{ObjectMeta: meta("web"), Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			ServiceAccountName: "web",
			Volumes:            []corev1.Volume{{Name: "page", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "page"}}}}},
			Containers: []corev1.Container{{Name: "web", Env: []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "password"}, Key: "p"}}}}}},
		}}}},
		"page":     &corev1.ConfigMap{ObjectMeta: meta("page")},
		"password": &corev1.Secret{ObjectMeta: meta("password")},
		"account":  &corev1.ServiceAccount{ObjectMeta: meta("web")},
		"role":     &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "web-reader"}},
		"binding": &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "web-reader"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "web-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "web", Namespace: "ns"}}},
		"unrelated": &corev1.ConfigMap{ObjectMeta: meta("unrelated")},
	}
}

// TestImpliedDependencies: the edges a graph reads from its children's specs, in every form a child
// can take (typed, unstructured), never against a declared edge or into a cycle, and none with
// WithoutImpliedDependencies.
func TestImpliedDependencies(t *testing.T) {
	order := []string{"web", "page", "password", "account", "role", "binding", "unrelated"}
	build := func(opts []Option, children map[string]client.Object, edit func(g *Graph)) *Graph {
		g := New(opts...)
		for _, name := range order {
			g.Add(name, children[name])
		}
		if edit != nil {
			edit(g)
		}
		return g
	}
	unstructuredWeb := func() map[string]client.Object {
		c := guestbook()
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c["web"])
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{Object: u}
		obj.SetAPIVersion("apps/v1")
		obj.SetKind("Deployment")
		c["web"] = obj
		return c
	}
	implied := map[string][]string{"web": {"page", "password", "account", "binding"}, "binding": {"role", "account"}}
	cases := map[string]struct {
		opts     []Option
		children map[string]client.Object
		edit     func(g *Graph)
		want     map[string][]string // dependencies per child that has some
	}{
		"typed children":           {children: guestbook(), want: implied},
		"an unstructured workload": {children: unstructuredWeb(), want: implied},
		"a declared edge stays as declared": {children: guestbook(), edit: func(g *Graph) { g.Node("web").DependsOn("page") },
			want: implied},
		"no cycle against a declared edge": {children: guestbook(), edit: func(g *Graph) { g.Node("page").DependsOn("web") },
			want: map[string][]string{"web": {"password", "account", "binding"}, "page": {"web"}, "binding": {"role", "account"}}},
		"turned off": {opts: []Option{WithoutImpliedDependencies()}, children: guestbook(), want: map[string][]string{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := build(tc.opts, tc.children, tc.edit)
			if err := g.Validate(); err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			for _, n := range g.Nodes() {
				if deps := n.Dependencies(); len(deps) > 0 {
					got[n.Name()] = deps
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("dependencies (-want +got):\n%s", diff)
			}
		})
	}
}

// TestImpliedDependenciesOrderDeletion: the guestbook's Deployment is created last and deleted first,
// its binding after it, then its ConfigMap, Secret, ServiceAccount and the ClusterRole.
func TestImpliedDependenciesOrderDeletion(t *testing.T) {
	g := New()
	children := guestbook()
	for _, name := range []string{"web", "page", "password", "account", "role", "binding", "unrelated"} {
		g.Add(name, children[name])
	}
	layers, err := g.Layers()
	if err != nil {
		t.Fatal(err)
	}
	// Layer 0 is created first and deleted last: Delete deletes a child once its dependents are gone.
	if diff := cmp.Diff([][]string{{"page", "password", "account", "role", "unrelated"}, {"binding"}, {"web"}}, layers); diff != "" {
		t.Errorf("layers (-want +got):\n%s", diff)
	}
}
