//go:build integration

package controller_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/examples/tenancy/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/tenancy/controller"
	"github.com/convergo-dev/convergo/reconcile/member"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/harness"
	"github.com/convergo-dev/convergo/testing/optest"
)

const timeout = 90 * time.Second

// hub is the tenancy operator running against the test's hub, with member clusters a and b named by
// kubeconfig Secrets, every cluster's requests counted.
type hub struct {
	env      *harness.Env
	members  map[string]*harness.Env
	counters map[string]*harness.RequestCounter
	recs     *optest.Reconciles
}

func startHub(t *testing.T) *hub {
	t.Helper()
	h := &hub{env: harness.Default(), members: map[string]*harness.Env{}, counters: map[string]*harness.RequestCounter{}, recs: optest.NewReconciles()}
	secrets := h.env.Namespace(t)
	for _, name := range []string{"a", "b"} {
		env, err := harness.Start(t.Context())
		if err != nil {
			t.Fatalf("start member cluster %s: %v", name, err)
		}
		t.Cleanup(func() { _ = env.Stop() })
		h.members[name], h.counters[name] = env, harness.NewRequestCounter()
		kubeconfig, err := os.ReadFile(env.KubeconfigPath)
		if err != nil {
			t.Fatal(err)
		}
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "member-" + name, Namespace: secrets, Labels: map[string]string{member.SecretLabel: name}},
			Data:       map[string][]byte{member.SecretKey: kubeconfig},
		}
		if err := h.env.Client.Create(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	h.env.StartManager(t, func(mgr manager.Manager) error {
		members := member.NewSet(mgr)
		newMember := controller.NewMember(mgr.GetScheme(), 5*time.Second)
		counted := func(name string, cfg *rest.Config) (cluster.Cluster, error) {
			return newMember(name, h.counters[name].Wrap(cfg))
		}
		if err := members.FromSecrets(secrets, counted); err != nil {
			return err
		}
		return controller.Setup(members)(mgr)
	}, h.recs.Observing(), harness.WithManagerOptions(func(o *manager.Options) { controller.CacheOptions(&o.Cache) }))
	return h
}

func (h *hub) waitTenant(t *testing.T, name, what string, cond func(*v1alpha1.Tenant) bool) *v1alpha1.Tenant {
	t.Helper()
	t.Logf("waiting for %s", what)
	got := &v1alpha1.Tenant{}
	harness.WaitForObject(t, h.env.Client, client.ObjectKey{Name: name}, got, timeout, cond)
	return got
}

// placedIn returns the tenant's quota and admins' binding in member m, nil where absent.
func (h *hub) placedIn(t *testing.T, m, tenant string) (*corev1.ResourceQuota, *rbacv1.RoleBinding) {
	t.Helper()
	c := h.members[m].Client
	q, b := &corev1.ResourceQuota{}, &rbacv1.RoleBinding{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: tenant, Name: "tenant"}, q); apierrors.IsNotFound(err) {
		q = nil
	} else if err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: tenant, Name: "tenant-admins"}, b); apierrors.IsNotFound(err) {
		b = nil
	} else if err != nil {
		t.Fatal(err)
	}
	return q, b
}

// TestTenantAcrossMembers runs a Tenant's life on three API servers: the hub and members a and b,
// named by kubeconfig Secrets. Placed in both, each member gets the namespace, the quota and the
// admins' binding, marked as the tenant's (no owner reference can cross clusters); a converged
// tenant's reconcile sends no request to any cluster; a member it does not know is said in its
// conditions; dropping b from the spec removes b's quota and binding and releases b's namespace;
// deleting the tenant removes a's, keeps its namespace, and leaves nothing of the tenant on it.
func TestTenantAcrossMembers(t *testing.T) {
	h := startHub(t)
	name := "payments-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	tenant := &v1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.TenantSpec{
		Members: []string{"a", "b"}, Admins: []string{"alice@example.com"},
		Quota: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")},
	}}
	if err := h.env.Client.Create(t.Context(), tenant); err != nil {
		t.Fatal(err)
	}
	got := h.waitTenant(t, name, "placed in a and b", func(tn *v1alpha1.Tenant) bool {
		return status.IsReady(tn) && slices.Equal(tn.Status.Placed, []string{"a", "b"})
	})
	for _, m := range []string{"a", "b"} {
		t.Logf("requests to member %s from the operator's start to the tenant placed:\n%s", m, h.counters[m].Snapshot())
	}
	for _, m := range []string{"a", "b"} {
		ns := &corev1.Namespace{}
		if err := h.members[m].Client.Get(t.Context(), client.ObjectKey{Name: name}, ns); err != nil {
			t.Fatalf("member %s: %v", m, err)
		}
		q, b := h.placedIn(t, m, name)
		if q == nil || b == nil {
			t.Fatalf("member %s: quota %v, binding %v; want both", m, q, b)
		}
		if diff := cmp.Diff([]string{"10", "alice@example.com", string(got.UID)},
			[]string{q.Spec.Hard.Pods().String(), b.Subjects[0].Name, q.Labels["convergo.dev/owner-uid"]}); diff != "" {
			t.Errorf("member %s's quota and binding (-want +got):\n%s", m, diff)
		}
		if len(q.OwnerReferences)+len(b.OwnerReferences)+len(ns.OwnerReferences) != 0 {
			t.Errorf("member %s's children have owner references into another cluster", m)
		}
	}

	// Converged: a reconcile sends nothing, to the hub or to either member.
	for _, c := range h.counters {
		c.Reset()
	}
	mark := h.recs.Mark()
	optest.MergePatch(t, h.env.Client, got, `{"metadata":{"annotations":{"example.com/poke":"1"}}}`)
	h.recs.WaitFor(t, client.ObjectKey{Name: name}, mark, timeout)
	sent := map[string]int{}
	for m, c := range h.counters {
		sent[m] = len(c.Snapshot().Filter(func(r harness.Request) bool { return r.ResourceRequest() && r.Verb != "watch" }))
	}
	if diff := cmp.Diff(map[string]int{"a": 0, "b": 0}, sent); diff != "" {
		t.Errorf("requests to the members for a converged tenant (-want +got):\n%s", diff)
	}

	// A member the hub has no Secret for: said, naming it.
	optest.MergePatch(t, h.env.Client, got, `{"spec":{"members":["a","b","c"]}}`)
	said := h.waitTenant(t, name, "member c said", func(tn *v1alpha1.Tenant) bool {
		c := meta.FindStatusCondition(tn.Status.Conditions, status.Reconciling)
		return c != nil && c.Reason == "ApplyFailed" && strings.Contains(c.Message, `member cluster "c"`)
	})
	t.Logf("Reconciling: %s", meta.FindStatusCondition(said.Status.Conditions, status.Reconciling).Message)

	// Member b dropped: its quota and binding go, its namespace stays, released.
	optest.MergePatch(t, h.env.Client, got, `{"spec":{"members":["a"]}}`)
	h.waitTenant(t, name, "placed in a only", func(tn *v1alpha1.Tenant) bool {
		return status.IsReady(tn) && slices.Equal(tn.Status.Placed, []string{"a"})
	})
	harness.Eventually(t, timeout, func() (bool, string) {
		q, b := h.placedIn(t, "b", name)
		return q == nil && b == nil, "member b's quota and binding"
	})
	checkReleased(t, h.members["b"].Client, name)

	// Deleted: a's quota and binding go, its namespace stays, released.
	h.counters["a"].Reset()
	if err := h.env.Client.Delete(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	harness.WaitForDeletion(t, h.env.Client, got, timeout)
	for _, r := range h.counters["a"].Snapshot().Filter(func(r harness.Request) bool { return r.IsWrite() }) {
		t.Logf("member a, deletion: %s %s %s/%s", r.Time.Format("15:04:05.000"), r.Verb, r.Resource, r.Name)
	}
	if q, b := h.placedIn(t, "a", name); q != nil || b != nil {
		t.Errorf("member a after the tenant's deletion: quota %v, binding %v; want neither", q != nil, b != nil)
	}
	checkReleased(t, h.members["a"].Client, name)
}

// checkReleased checks that the tenant's namespace is still in the member, with nothing of the
// operator's marks left on it.
func checkReleased(t *testing.T, c client.Client, name string) {
	t.Helper()
	harness.Eventually(t, timeout, func() (bool, string) {
		ns := &corev1.Namespace{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, ns); err != nil {
			return false, err.Error()
		}
		for k := range ns.Labels {
			if strings.HasPrefix(k, "convergo.dev/") {
				return false, "label " + k + " still on the namespace"
			}
		}
		return ns.DeletionTimestamp == nil, "namespace being deleted"
	})
}
