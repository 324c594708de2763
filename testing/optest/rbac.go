package optest

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// ServiceAccountConfig grants the ClusterRole in roleFile (the role.yaml controller-gen generates from
// the operator's RBAC markers) to a new ServiceAccount "operator" in ns and returns a copy of admin
// that impersonates it, so that a manager started with it has exactly the permissions the operator's
// manifests give it: a missing marker fails the test. The ClusterRole and its binding are named after
// ns (tests do not share them) and deleted at cleanup.
//
//	cfg := optest.ServiceAccountConfig(t, env.Config, env.Client, ns, "../config/rbac/role.yaml")
//	env.StartManager(t, controller.SetupWithManager, harness.WithManagerConfig(cfg))
func ServiceAccountConfig(t testing.TB, admin *rest.Config, c client.Client, ns, roleFile string) *rest.Config {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	data, err := os.ReadFile(roleFile)
	if err != nil {
		t.Fatalf("read the operator's role: %v", err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatalf("%s: %v", roleFile, err)
	}
	// A name per namespace, so that tests do not share (or race on) the cluster-scoped objects.
	role.Name = role.Name + "-" + ns
	if err := c.Create(ctx, &role); err != nil {
		t.Fatalf("create ClusterRole from %s: %v", roleFile, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "operator"}}
	if err := c.Create(ctx, sa); err != nil {
		t.Fatalf("create ServiceAccount: %v", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
	}
	if err := c.Create(ctx, binding); err != nil {
		t.Fatalf("create ClusterRoleBinding: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, obj := range []client.Object{binding, &role} {
			if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s: %v", obj.GetName(), err)
			}
		}
	})
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":" + sa.Name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	return cfg
}
