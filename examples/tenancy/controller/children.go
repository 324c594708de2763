package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/convergo-dev/convergo/examples/tenancy/api/v1alpha1"
	"github.com/convergo-dev/convergo/reconcile/graph"
)

// Children places t in each of its member clusters: the namespace named after it (kept when the
// tenant goes: the team's workloads are in it), then, in it, the quota and the admins' binding to the
// cluster role "admin".
func Children(_ context.Context, t *v1alpha1.Tenant) (*graph.Graph, error) {
	g := graph.New()
	labels := map[string]string{"app.kubernetes.io/managed-by": Name, "tenancy.convergo.dev/tenant": t.Name}
	for _, m := range t.Spec.Members {
		ns := "namespace-" + m
		g.Add(ns, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: t.Name, Labels: labels}}).
			InCluster(m).KeepOnDelete()
		if len(t.Spec.Quota) > 0 {
			g.Add("quota-"+m, &corev1.ResourceQuota{
				ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: t.Name, Labels: labels},
				Spec:       corev1.ResourceQuotaSpec{Hard: t.Spec.Quota},
			}).InCluster(m).DependsOn(ns)
		}
		if len(t.Spec.Admins) > 0 {
			g.Add("admins-"+m, adminsBinding(t, labels)).InCluster(m).DependsOn(ns)
		}
	}
	return g, nil
}

// adminsBinding gives t's admins the cluster role "admin" in t's namespace.
func adminsBinding(t *v1alpha1.Tenant, labels map[string]string) *rbacv1.RoleBinding {
	b := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant-admins", Namespace: t.Name, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
	}
	for _, u := range t.Spec.Admins {
		b.Subjects = append(b.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: u})
	}
	return b
}
