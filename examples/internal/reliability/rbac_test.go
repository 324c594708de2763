//go:build integration

package reliability_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/convergo-dev/convergo/examples/internal/reliability"
	memcachedv1 "github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	welcomev1 "github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	welcomecontroller "github.com/convergo-dev/convergo/examples/welcome/controller"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/harness"
)

// unexercised lists the permissions a role may grant although no run of the test can show they are
// needed, each with the reason. Every other permission must be used by some request of a full run, or
// the operator must fail without it (see TestRBACRoleSufficientAndMinimal).
var unexercised = map[string]string{
	"events.k8s.io/events:patch": "the event recorder patches an event series when the same event repeats within minutes",
}

// readVerbs are interchangeable for the minimality check: a resource the operator reads needs the
// usual get, list and watch (informers list and watch; conflict handling gets).
var readVerbs = []string{"get", "list", "watch"}

// loadRole reads the ClusterRole generated from the operator's RBAC markers.
func loadRole(t *testing.T, op *reliability.Operator) *rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile(op.RolePath())
	if err != nil {
		t.Fatalf("read generated role: %v", err)
	}
	var roles []*rbacv1.ClusterRole
	for _, doc := range strings.Split(string(data), "\n---") {
		if strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(doc), "---")) == "" {
			continue
		}
		var role rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict([]byte(doc), &role); err != nil {
			t.Fatalf("decode %s: %v", op.RolePath(), err)
		}
		roles = append(roles, &role)
	}
	if len(roles) != 1 || roles[0].Kind != "ClusterRole" {
		t.Fatalf("%s holds %d documents, want one ClusterRole", op.RolePath(), len(roles))
	}
	return roles[0]
}

// grants flattens a role into "group/resource:verb" strings and reports wildcards.
func grants(role *rbacv1.ClusterRole) (out []string, wildcards []string) {
	for i, r := range role.Rules {
		for _, field := range [][]string{r.APIGroups, r.Resources, r.Verbs, r.ResourceNames, r.NonResourceURLs} {
			if slices.ContainsFunc(field, func(s string) bool { return strings.Contains(s, "*") }) {
				wildcards = append(wildcards, fmt.Sprintf("rule %d: %+v", i, r))
			}
		}
		if len(r.NonResourceURLs) > 0 {
			wildcards = append(wildcards, fmt.Sprintf("rule %d grants non-resource URLs %v", i, r.NonResourceURLs))
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, permission(g, res, v))
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), wildcards
}

func permission(group, resource, verb string) string {
	if group == "" {
		group = "core"
	}
	return group + "/" + resource + ":" + verb
}

// TestRBACRoleSufficientAndMinimal runs each operator as a ServiceAccount bound only to the
// ClusterRole generated from its RBAC markers (config/rbac/role.yaml), by impersonation, through a
// whole life cycle: create, converge, change, delete (with a password Secret and a NodePort Service
// for Welcome). The API server enforces OwnerReferencesPermissionEnforcement (see TestMain), as
// hardened clusters do.
//
//   - No wildcard, no non-resource URL.
//   - Sufficient: the life cycle completes and not one request is forbidden.
//   - Minimal: every permission is used by a request of the run; for each one that is not (a
//     server-side apply that creates an object needs "create" without any POST; admission checks
//     "update" on the owner's finalizers), the life cycle is run again with a role lacking just that
//     permission and must hit a forbidden request. Only the permissions in unexercised are excused.
func TestRBACRoleSufficientAndMinimal(t *testing.T) {
	for _, op := range reliability.Operators {
		t.Run(op.Name, func(t *testing.T) {
			env := harness.Default()
			role := loadRole(t, op)
			granted, wildcards := grants(role)
			for _, w := range wildcards {
				t.Errorf("role %s has a wildcard or non-resource grant: %s", role.Name, w)
			}

			var reqs harness.Requests
			t.Run("full role", func(t *testing.T) {
				m, forbidden := runLifeCycleAs(t, env, op, role)
				if forbidden != nil {
					t.Fatalf("the operator needs a permission the role lacks: forbidden %s", describeRequest(*forbidden))
				}
				reqs = m.Requests.Snapshot()
			})
			if t.Failed() {
				return
			}
			used := map[string]bool{}
			for _, r := range reqs {
				if !r.ResourceRequest() {
					continue
				}
				used[permission(r.APIGroup, r.FullResource(), r.Verb)] = true
				if slices.Contains(readVerbs, r.Verb) {
					for _, v := range readVerbs {
						used[permission(r.APIGroup, r.FullResource(), v)] = true
					}
				}
			}
			var unused []string
			for _, g := range granted {
				if !used[g] {
					unused = append(unused, g)
				}
			}
			excess, needed := 0, 0
			for _, g := range unused {
				if why := unexercised[g]; why != "" {
					t.Logf("granted, not exercised, excused: %s: %s", g, why)
					continue
				}
				t.Run("without "+g, func(t *testing.T) {
					_, forbidden := runLifeCycleAs(t, env, op, withoutPermission(role, g))
					if forbidden == nil {
						excess++
						t.Errorf("role %s grants %s, but the operator completes its life cycle without it: remove it from the RBAC markers", role.Name, g)
						return
					}
					needed++
					t.Logf("needed although no request names it: without %s, %s is forbidden", g, describeRequest(*forbidden))
				})
			}
			t.Logf("FIGURES rbac %s: %d permissions granted, %d used by %d requests made as the ServiceAccount, 0 forbidden; %d more shown needed by removing them; %d excused; %d excess",
				op.Name, len(granted), len(granted)-len(unused), len(reqs), needed, len(unused)-needed-excess, excess)
		})
	}
}

// runLifeCycleAs runs op's manager as a fresh ServiceAccount bound to role through the life cycle
// and returns the manager and the first forbidden request, if any (the life cycle stops there).
func runLifeCycleAs(t *testing.T, env *harness.Env, op *reliability.Operator, role *rbacv1.ClusterRole) (*reliability.Manager, *harness.Request) {
	t.Helper()
	ns := env.Namespace(t)
	cfg := bindServiceAccount(t, env, role, ns)
	// The cache is limited to the test's namespace, so that objects other tests leave behind (in
	// namespaces being deleted, where writes are refused) stay out of the picture; the verbs and
	// resources used are the same as cluster-wide.
	m := reliability.StartManager(t, cfg, env.Scheme, op.Setup, reliability.WithName(op.Name), reliability.WithNamespace(ns))
	reliability.DeleteAtCleanup(t, env.Client, op, ns)
	return m, lifeCycle(t, env, op, ns, m)
}

// withoutPermission returns a copy of role that lacks one "group/resource:verb" permission.
func withoutPermission(role *rbacv1.ClusterRole, drop string) *rbacv1.ClusterRole {
	out := role.DeepCopy()
	out.Rules = nil
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				var verbs []string
				for _, v := range r.Verbs {
					if permission(g, res, v) != drop {
						verbs = append(verbs, v)
					}
				}
				if len(verbs) > 0 {
					out.Rules = append(out.Rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: []string{res}, Verbs: verbs})
				}
			}
		}
	}
	return out
}

func describeRequest(r harness.Request) string {
	return fmt.Sprintf("%s %s/%s %s/%s", r.Verb, r.APIGroup, r.FullResource(), r.Namespace, r.Name)
}

// firstForbidden returns the first forbidden request m made, or nil.
func firstForbidden(m *reliability.Manager) *harness.Request {
	for _, r := range m.Requests.Snapshot() {
		if r.StatusCode == http.StatusForbidden {
			return &r
		}
	}
	return nil
}

// bindServiceAccount creates a ServiceAccount in ns, a copy of role (under a name unique to the
// test) bound to it cluster-wide, and returns a config that impersonates the ServiceAccount.
func bindServiceAccount(t *testing.T, env *harness.Env, role *rbacv1.ClusterRole, ns string) *rest.Config {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "operator"}}
	if err := env.Client.Create(t.Context(), sa); err != nil {
		t.Fatal(err)
	}
	cr := role.DeepCopy()
	cr.ObjectMeta = metav1.ObjectMeta{Name: role.Name + "-" + ns}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: cr.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
	}
	for _, obj := range []client.Object{cr, binding} {
		if err := env.Client.Create(t.Context(), obj); err != nil {
			t.Fatalf("create %T: %v", obj, err)
		}
		t.Cleanup(func() {
			if err := env.Client.Delete(context.WithoutCancel(t.Context()), obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %T %s: %v", obj, obj.GetName(), err)
			}
		})
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + sa.Name}
	// The RBAC authorizer learns about the new binding from its informer: wait until it applies.
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, convergeTimeout, func() (bool, string) {
		err := c.List(t.Context(), &corev1.ServiceList{}, client.InNamespace(ns))
		return err == nil, fmt.Sprintf("list services as the ServiceAccount: %v", err)
	})
	return cfg
}

// lifeCycle drives op's objects through creation, a spec change and deletion in ns, and returns the
// first forbidden request the manager m made (stopping there), or nil once the life cycle completed.
func lifeCycle(t *testing.T, env *harness.Env, op *reliability.Operator, ns string, m *reliability.Manager) *harness.Request {
	t.Helper()
	names := reliability.Names(op.Name, 2)
	if op == reliability.Welcome {
		// The Secret comes after the Welcome has stalled without it: the Warning event about that is
		// what the role's events:create is for (a Welcome's routine changes make no event).
		w := op.New(ns, "with-password", 3).(*welcomev1.Welcome)
		w.Spec.PasswordSecretRef = &welcomev1.SecretKeyRef{Name: "pw", Key: "password"}
		w.Spec.ServiceType = corev1.ServiceTypeNodePort
		if err := env.Client.Create(t.Context(), w); err != nil {
			t.Fatal(err)
		}
		if f := stalledOrForbidden(t, env, client.ObjectKeyFromObject(w), m); f != nil {
			return f
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pw"}, StringData: map[string]string{"password": "x"}}
		if err := env.Client.Create(t.Context(), secret); err != nil {
			t.Fatal(err)
		}
	} else {
		mc := op.New(ns, "with-max-unavailable", 3).(*memcachedv1.Memcached)
		mc.Spec.Size = 2
		mc.Spec.MaxUnavailable = new(int32)
		if err := env.Client.Create(t.Context(), mc); err != nil {
			t.Fatal(err)
		}
	}
	reliability.CreateAll(t, env.Client, op, ns, names)
	exp := reliability.Expectation{Operator: op, Namespace: ns}
	if f := convergedOrForbidden(t, env, exp, m); f != nil {
		return f
	}
	reliability.ChangeAll(t, env.Client, op, ns, names[:1])
	exp.Deleted = names[1:]
	reliability.DeleteAll(t, env.Client, op, ns, exp.Deleted)
	return convergedOrForbidden(t, env, exp, m)
}

// stalledOrForbidden waits until the Welcome key shows a Stalled condition whose reason is
// SecretNotFound, or m made a forbidden request, and returns that request.
func stalledOrForbidden(t *testing.T, env *harness.Env, key client.ObjectKey, m *reliability.Manager) *harness.Request {
	t.Helper()
	return untilOrForbidden(t, m, func() (bool, string) {
		w := &welcomev1.Welcome{}
		if err := env.Client.Get(t.Context(), key, w); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(w.GetConditions(), status.Stalled)
		return c != nil && c.Reason == welcomecontroller.ReasonSecretNotFound, fmt.Sprintf("conditions %v", w.Status.Conditions)
	})
}

// convergedOrForbidden waits until exp holds or m made a forbidden request, and returns that request.
func convergedOrForbidden(t *testing.T, env *harness.Env, exp reliability.Expectation, m *reliability.Manager) *harness.Request {
	t.Helper()
	return untilOrForbidden(t, m, func() (bool, string) {
		rep, err := reliability.Audit(t.Context(), env.Client, exp)
		if err != nil {
			return false, err.Error()
		}
		return rep.OK(), rep.String()
	})
}

// untilOrForbidden waits until done reports true or m made a forbidden request, and returns that
// request (nil once done).
func untilOrForbidden(t *testing.T, m *reliability.Manager, done func() (bool, string)) *harness.Request {
	t.Helper()
	var forbidden *harness.Request
	harness.Eventually(t, convergeTimeout, func() (bool, string) {
		if forbidden = firstForbidden(m); forbidden != nil {
			return true, ""
		}
		return done()
	})
	return forbidden
}
