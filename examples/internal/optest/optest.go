package optest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	"github.com/convergo-dev/convergo/testing/harness"
)

// Timeout bounds every wait of the examples' tests; the machines running them are often loaded.
const Timeout = 60 * time.Second

// MarkDeploymentAvailable writes the status the Deployment controller and kubelets would report once
// every replica of the current template is available. A bare API server runs neither.
func MarkDeploymentAvailable(t testing.TB, c client.Client, key client.ObjectKey) {
	t.Helper()
	updateDeploymentStatus(t, c, key, "available", func(d *appsv1.Deployment) {
		n := ptr.Deref(d.Spec.Replicas, 1)
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation,
			Replicas:           n,
			UpdatedReplicas:    n,
			ReadyReplicas:      n,
			AvailableReplicas:  n,
			Conditions: []appsv1.DeploymentCondition{{
				Type:               appsv1.DeploymentAvailable,
				Status:             corev1.ConditionTrue,
				Reason:             "MinimumReplicasAvailable",
				Message:            "Deployment has minimum availability.",
				LastUpdateTime:     metav1.Now(),
				LastTransitionTime: metav1.Now(),
			}},
		}
	})
}

// MarkDeploymentProgressing adds the condition the Deployment controller reports once a rollout is
// complete (Progressing=True, reason NewReplicaSetAvailable): a status change that is no news to the
// operator.
func MarkDeploymentProgressing(t testing.TB, c client.Client, key client.ObjectKey) {
	t.Helper()
	updateDeploymentStatus(t, c, key, "progressing", func(d *appsv1.Deployment) {
		d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{
			Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
			LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		})
	})
}

// updateDeploymentStatus applies change to the Deployment named key and writes its status, again from a
// fresh read on conflicts; state says what the change marks it, for the failure message.
func updateDeploymentStatus(t testing.TB, c client.Client, key client.ObjectKey, state string, change func(*appsv1.Deployment)) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var d appsv1.Deployment
		if err := c.Get(ctx, key, &d); err != nil {
			return err
		}
		change(&d)
		return c.Status().Update(ctx, &d)
	})
	if err != nil {
		t.Fatalf("mark deployment %s %s: %v", key, state, err)
	}
}

// ReconcileCount returns how many reconciles the named controller finished so far in this process
// (controller-runtime's controller_runtime_reconcile_total, all results).
func ReconcileCount(t testing.TB, controller string) int {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	total := 0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					total += int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return total
}

// WaitForReconciles waits until the named controller has finished at least n reconciles.
func WaitForReconciles(t testing.TB, controller string, n int) {
	t.Helper()
	harness.Eventually(t, Timeout, func() (bool, string) {
		got := ReconcileCount(t, controller)
		return got >= n, fmt.Sprintf("%s finished %d reconciles, want %d", controller, got, n)
	})
}

// ExpectNoWrites runs each trigger in a subtest and checks that the named controller, whose requests
// counter counts, reconciles after it without a single write in namespace ns: the operator must leave
// a converged object alone whatever woke it up.
func ExpectNoWrites(t *testing.T, counter *harness.RequestCounter, ns, controller string, triggers map[string]func(t *testing.T)) {
	t.Helper()
	for name, trigger := range triggers {
		t.Run(name, func(t *testing.T) {
			counter.Reset()
			before := ReconcileCount(t, controller)
			trigger(t)
			WaitForReconciles(t, controller, before+1)
			reqs := counter.Snapshot().InNamespace(ns)
			if n := reqs.Writes(); n != 0 {
				t.Errorf("%s sent %d writes after reconciling a converged object, want 0:\n%s\n%v", controller, n, reqs, reqs.Filter(harness.Request.IsWrite))
			}
		})
	}
}

// Events returns the events.k8s.io events in namespace ns about the object named name.
func Events(t testing.TB, c client.Client, ns, name string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := c.List(context.WithoutCancel(t.Context()), &list, client.InNamespace(ns)); err != nil {
		t.Fatalf("list events in %s: %v", ns, err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// WaitForEvent waits for an event about name in ns with the given type and reason and returns it.
func WaitForEvent(t testing.TB, c client.Client, ns, name, eventType, reason string) eventsv1.Event {
	t.Helper()
	var found eventsv1.Event
	harness.Eventually(t, Timeout, func() (bool, string) {
		events := Events(t, c, ns, name)
		var seen []string
		for _, e := range events {
			if e.Type == eventType && e.Reason == reason {
				found = e
				return true, ""
			}
			seen = append(seen, e.Type+"/"+e.Reason+": "+e.Note)
		}
		return false, fmt.Sprintf("no %s event with reason %s about %s/%s; events: %s", eventType, reason, ns, name, strings.Join(seen, "; "))
	})
	return found
}

// ServiceAccountConfig grants the ClusterRole in roleFile (a generated role.yaml) to a new
// ServiceAccount in ns and returns a copy of admin that impersonates it, so a manager started with
// it has exactly the permissions the operator's manifests give it.
func ServiceAccountConfig(t testing.TB, admin *rest.Config, c client.Client, ns, roleFile string) *rest.Config {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	data, err := os.ReadFile(roleFile)
	if err != nil {
		t.Fatal(err)
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
