package graph

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Option configures a Graph.
type Option func(*config)

type config struct {
	// explicitOnly: no implied dependencies (WithoutImpliedDependencies).
	explicitOnly bool
	// externalKinds are WithExternalKinds'.
	externalKinds []externalOps
}

// WithoutImpliedDependencies turns off the dependencies a Graph reads from its children's specs (see
// Graph.Validate): only DependsOn and DependsOnForCreation order the children.
func WithoutImpliedDependencies() Option {
	return func(c *config) { c.explicitOnly = true }
}

// ref names an object a child's spec refers to: its kind, namespace ("" for the child's own or for a
// cluster-scoped object) and name.
type ref struct {
	kind, namespace, name string
}

// addImplied adds the dependencies g's children state in their specs as creation-only edges (see
// DependsOnForCreation), each only where the referenced object is a child of g, the referring child
// does not declare the edge already, and the edge makes no cycle with the others:
//
//   - a workload (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, Pod) depends on the
//     ConfigMaps, Secrets and PersistentVolumeClaims its pod template mounts, takes environment
//     variables from or pulls images with, on its ServiceAccount, and on the RoleBindings and
//     ClusterRoleBindings that grant that ServiceAccount its permissions;
//   - a RoleBinding or ClusterRoleBinding depends on the Role or ClusterRole it binds and the
//     ServiceAccounts it binds it to.
//
// So they exist before it is created, and go after it on deletion. g is valid and acyclic. Validate
// runs several times per reconcile (Apply, Delete, Prune, Order call it): the references are read once
// per set of children, again only after Add.
func (g *Graph) addImplied() {
	if g.cfg.explicitOnly || g.impliedFor == len(g.nodes) {
		return
	}
	g.impliedFor = len(g.nodes)
	children := map[ref]*Node{}
	for _, n := range g.nodes {
		if n.ext != nil {
			continue // external nodes state no references
		}
		if kind := kindOf(n.obj); kind != "" {
			children[ref{kind, n.obj.GetNamespace(), n.obj.GetName()}] = n
		}
	}
	find := func(r ref) *Node {
		if n := children[r]; n != nil {
			return n
		}
		// A namespace left empty is the owner's: it matches either way.
		for key, n := range children {
			if key.kind == r.kind && key.name == r.name && (key.namespace == "" || r.namespace == "" || key.namespace == r.namespace) {
				return n
			}
		}
		return nil
	}
	for _, n := range g.nodes {
		if n.ext != nil {
			continue
		}
		for _, r := range refsOf(n.obj, g.nodes) {
			if to := find(r); to != nil && to != n && !slices.Contains(n.deps, to.name) && !g.reaches(to, n.name) {
				n.DependsOnForCreation(to.name)
			}
		}
	}
}

// reaches reports whether from depends on target, directly or not.
func (g *Graph) reaches(from *Node, target string) bool {
	seen := map[string]bool{}
	var walk func(n *Node) bool
	walk = func(n *Node) bool {
		if n.name == target {
			return true
		}
		if seen[n.name] {
			return false
		}
		seen[n.name] = true
		for _, d := range n.deps {
			if next := g.index[d]; next != nil && walk(next) {
				return true
			}
		}
		return false
	}
	return walk(from)
}

// kindOf returns the kind of obj among those a reference can name, or "".
func kindOf(obj client.Object) string {
	switch obj := obj.(type) {
	case *corev1.ConfigMap:
		return "ConfigMap"
	case *corev1.Secret:
		return "Secret"
	case *corev1.PersistentVolumeClaim:
		return "PersistentVolumeClaim"
	case *corev1.ServiceAccount:
		return "ServiceAccount"
	case *rbacv1.Role:
		return "Role"
	case *rbacv1.ClusterRole:
		return "ClusterRole"
	case *rbacv1.RoleBinding:
		return "RoleBinding"
	case *rbacv1.ClusterRoleBinding:
		return "ClusterRoleBinding"
	case *unstructured.Unstructured:
		switch gvk := obj.GroupVersionKind(); {
		case gvk.Group == "" && (gvk.Kind == "ConfigMap" || gvk.Kind == "Secret" || gvk.Kind == "PersistentVolumeClaim" || gvk.Kind == "ServiceAccount"),
			gvk.Group == rbacv1.GroupName:
			return gvk.Kind
		}
	}
	return ""
}

// refsOf returns what obj's spec refers to; nodes are the graph's children, whose bindings a
// workload's ServiceAccount gets its permissions from.
func refsOf(obj client.Object, nodes []*Node) []ref {
	ns := obj.GetNamespace()
	if u, ok := obj.(*unstructured.Unstructured); ok {
		obj = typed(u)
	}
	switch obj := obj.(type) {
	case *appsv1.Deployment:
		return podRefs(ns, &obj.Spec.Template.Spec, nodes)
	case *appsv1.StatefulSet:
		return podRefs(ns, &obj.Spec.Template.Spec, nodes)
	case *appsv1.DaemonSet:
		return podRefs(ns, &obj.Spec.Template.Spec, nodes)
	case *appsv1.ReplicaSet:
		return podRefs(ns, &obj.Spec.Template.Spec, nodes)
	case *batchv1.Job:
		return podRefs(ns, &obj.Spec.Template.Spec, nodes)
	case *batchv1.CronJob:
		return podRefs(ns, &obj.Spec.JobTemplate.Spec.Template.Spec, nodes)
	case *corev1.Pod:
		return podRefs(ns, &obj.Spec, nodes)
	case *rbacv1.RoleBinding:
		return bindingRefs(ns, obj.RoleRef, obj.Subjects)
	case *rbacv1.ClusterRoleBinding:
		return bindingRefs("", obj.RoleRef, obj.Subjects)
	}
	return nil
}

// typed converts an unstructured child of a kind refsOf reads to its type; it returns u otherwise.
func typed(u *unstructured.Unstructured) client.Object {
	var out client.Object
	switch gvk := u.GroupVersionKind(); gvk.Group + "/" + gvk.Kind {
	case "apps/Deployment":
		out = &appsv1.Deployment{}
	case "apps/StatefulSet":
		out = &appsv1.StatefulSet{}
	case "apps/DaemonSet":
		out = &appsv1.DaemonSet{}
	case "apps/ReplicaSet":
		out = &appsv1.ReplicaSet{}
	case "batch/Job":
		out = &batchv1.Job{}
	case "batch/CronJob":
		out = &batchv1.CronJob{}
	case "/Pod":
		out = &corev1.Pod{}
	case rbacv1.GroupName + "/RoleBinding":
		out = &rbacv1.RoleBinding{}
	case rbacv1.GroupName + "/ClusterRoleBinding":
		out = &rbacv1.ClusterRoleBinding{}
	default:
		return u
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return u
	}
	return out
}

// podRefs returns what a pod spec in namespace ns refers to, and the bindings among nodes that grant
// its ServiceAccount permissions.
func podRefs(ns string, spec *corev1.PodSpec, nodes []*Node) []ref {
	var out []ref
	add := func(kind, name string) {
		if name != "" {
			out = append(out, ref{kind, ns, name})
		}
	}
	for _, v := range spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			add("ConfigMap", v.ConfigMap.Name)
		case v.Secret != nil:
			add("Secret", v.Secret.SecretName)
		case v.PersistentVolumeClaim != nil:
			add("PersistentVolumeClaim", v.PersistentVolumeClaim.ClaimName)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					add("ConfigMap", s.ConfigMap.Name)
				}
				if s.Secret != nil {
					add("Secret", s.Secret.Name)
				}
			}
		}
	}
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				add("ConfigMap", e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				add("Secret", e.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				add("ConfigMap", e.ValueFrom.ConfigMapKeyRef.Name)
			}
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				add("Secret", e.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
	for _, s := range spec.ImagePullSecrets {
		add("Secret", s.Name)
	}
	sa := spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	add("ServiceAccount", sa)
	for _, n := range nodes {
		binding := typedBinding(n.obj)
		if binding == nil {
			continue
		}
		for _, r := range binding.refs {
			if r.kind == "ServiceAccount" && r.name == sa && (r.namespace == "" || ns == "" || r.namespace == ns) {
				out = append(out, ref{binding.kind, binding.namespace, n.obj.GetName()})
			}
		}
	}
	return out
}

// binding is a RoleBinding or ClusterRoleBinding child and what it refers to.
type binding struct {
	kind, namespace string
	refs            []ref
}

// typedBinding returns obj as a binding, or nil.
func typedBinding(obj client.Object) *binding {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		obj = typed(u)
	}
	switch b := obj.(type) {
	case *rbacv1.RoleBinding:
		return &binding{kind: "RoleBinding", namespace: b.Namespace, refs: bindingRefs(b.Namespace, b.RoleRef, b.Subjects)}
	case *rbacv1.ClusterRoleBinding:
		return &binding{kind: "ClusterRoleBinding", refs: bindingRefs("", b.RoleRef, b.Subjects)}
	}
	return nil
}

// bindingRefs returns the role a binding in namespace ns binds and the ServiceAccounts it binds it to.
func bindingRefs(ns string, role rbacv1.RoleRef, subjects []rbacv1.Subject) []ref {
	var out []ref
	switch role.Kind {
	case "Role":
		out = append(out, ref{"Role", ns, role.Name})
	case "ClusterRole":
		out = append(out, ref{"ClusterRole", "", role.Name})
	}
	for _, s := range subjects {
		if s.Kind == rbacv1.ServiceAccountKind {
			out = append(out, ref{"ServiceAccount", s.Namespace, s.Name})
		}
	}
	return out
}
