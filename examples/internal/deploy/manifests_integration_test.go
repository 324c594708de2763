//go:build integration

package deploy

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	memcached "github.com/convergo-dev/convergo/examples/memcached/controller"
	welcome "github.com/convergo-dev/convergo/examples/welcome/controller"
	"github.com/convergo-dev/convergo/testing/harness"
	"github.com/convergo-dev/convergo/testing/optest"
)

// timeout bounds each wait of these tests.
const timeout = 2 * time.Minute

// operators are the examples and how their main.go sets up their manager.
var operators = map[string]struct {
	setup        func(manager.Manager) error
	cacheOptions func(*cache.Options)
}{
	"memcached": {setup: memcached.SetupWithManager, cacheOptions: memcached.CacheOptions},
	"welcome":   {setup: welcome.SetupWithManager, cacheOptions: welcome.CacheOptions},
}

// TestManifestsOnAPIServer checks each example's config/default on a real API server, as a deploy uses
// it: it server-side applies (again and again, changing nothing); its namespace enforces the
// restricted Pod Security Standard and admits the operator's pods, which the Deployment controller
// would create from its template; and the operator, run with exactly the permissions of its
// ServiceAccount (impersonated) and with leader election in its namespace as its Deployment's
// arguments say, takes a sample from config/samples to Ready and releases it on deletion.
func TestManifestsOnAPIServer(t *testing.T) {
	env := harness.Default()
	for name, operator := range operators {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			op, err := LoadOperator(filepath.Join("..", "..", name), "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Apply(ctx, env.Client, op.Objects, timeout); err != nil {
				t.Fatalf("server-side apply of config/default: %v", err)
			}
			if err := WaitEstablished(ctx, env.Client, op.CRDs, timeout); err != nil {
				t.Fatal(err)
			}
			// Once the CRDs' status is written, applying the same manifests changes nothing.
			second, err := Apply(ctx, env.Client, op.Objects, timeout)
			if err != nil {
				t.Fatalf("second server-side apply of config/default: %v", err)
			}
			third, err := Apply(ctx, env.Client, op.Objects, timeout)
			if err != nil {
				t.Fatalf("third server-side apply of config/default: %v", err)
			}
			if diff := cmp.Diff(versions(second), versions(third)); diff != "" {
				t.Errorf("applying config/default again changed objects (resourceVersions, -before +after):\n%s", diff)
			}

			checkPodSecurity(t, env.Client, op)

			cfg := op.Impersonate(env.Config)
			env.StartManager(t, operator.setup, harness.WithManagerConfig(cfg), harness.WithManagerOptions(func(o *manager.Options) {
				operator.cacheOptions(&o.Cache)
				o.LeaderElection = true
				o.LeaderElectionNamespace = op.Namespace
				o.LeaderElectionID = name + "-deploy-test"
				o.LeaderElectionReleaseOnCancel = true
			}))

			ns := env.Namespace(t)
			samples, err := op.Samples(ns)
			if err != nil {
				t.Fatal(err)
			}
			secrets, err := Prerequisites(samples)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Apply(ctx, env.Client, samples, timeout); err != nil {
				t.Fatalf("apply config/samples: %v", err)
			}
			if len(secrets) > 0 {
				// The password Secret comes after the sample, so that the operator's watch of Secrets
				// (a permission of its own) has to bring the sample back.
				for _, s := range samples {
					waitStalled(t, env.Client, s)
				}
				for _, s := range secrets {
					if err := env.Client.Create(ctx, s); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, s := range samples {
				// The plain API server runs no Deployment controller: report the operator's Deployment
				// available as it would.
				key := client.ObjectKeyFromObject(s)
				harness.WaitForObject(t, env.Client, key, &appsv1.Deployment{}, timeout, nil)
				optest.MarkDeploymentAvailable(t, env.Client, key)
			}
			if err := WaitReady(ctx, env.Client, samples, timeout); err != nil {
				t.Fatalf("the operator, as ServiceAccount %s/%s, did not converge its sample: %v", op.Namespace, op.ServiceAccount, err)
			}
			if err := Delete(ctx, env.Client, samples); err != nil {
				t.Fatal(err)
			}
			if err := WaitGone(ctx, env.Client, samples, timeout); err != nil {
				t.Fatalf("the operator, as ServiceAccount %s/%s, did not release its sample: %v", op.Namespace, op.ServiceAccount, err)
			}
		})
	}
}

// checkPodSecurity checks that the operator's namespace enforces the restricted Pod Security Standard
// and admits a pod of the operator's Deployment (a server-side dry run: the Deployment controller,
// which would create it, does not run here), and that it refuses the same pod allowed to escalate its
// privileges, which shows that the policy is enforced.
func checkPodSecurity(t *testing.T, c client.Client, op *Operator) {
	t.Helper()
	ctx := t.Context()
	var ns corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: op.Namespace}, &ns); err != nil {
		t.Fatal(err)
	}
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("namespace %s: label pod-security.kubernetes.io/enforce=%q, want restricted", op.Namespace, got)
	}
	var dep appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKeyFromObject(op.Deployment), &dep); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: dep.Namespace, Name: dep.Name + "-admission", Labels: dep.Spec.Template.Labels},
		Spec:       *dep.Spec.Template.Spec.DeepCopy(),
	}
	if err := c.Create(ctx, pod.DeepCopy(), client.DryRunAll); err != nil {
		t.Errorf("a pod of Deployment %s is not admitted in namespace %s: %v", dep.Name, dep.Namespace, err)
	}
	bad := pod.DeepCopy()
	bad.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
	err := c.Create(ctx, bad, client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), "violates PodSecurity") {
		t.Errorf("a pod allowed to escalate privileges was not refused by PodSecurity in namespace %s (error: %v)", dep.Namespace, err)
	}
}

// versions maps each object to its resourceVersion.
func versions(objs []*unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for _, o := range objs {
		out[objectID(o)] = o.GetResourceVersion()
	}
	return out
}

// waitStalled waits until obj reports Stalled=True, as a sample whose password Secret is missing does.
func waitStalled(t *testing.T, c client.Client, obj *unstructured.Unstructured) {
	t.Helper()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	harness.Eventually(t, timeout, func() (bool, string) {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), live); err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
		for _, cond := range conds {
			if m, ok := cond.(map[string]any); ok && m["type"] == "Stalled" && m["status"] == "True" {
				return true, ""
			}
		}
		_, state := readyCondition(live)
		return false, objectID(obj) + " is not Stalled: " + state
	})
}
