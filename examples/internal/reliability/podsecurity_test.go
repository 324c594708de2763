//go:build integration

package reliability_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/examples/internal/reliability"
	memcachedv1 "github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	welcomev1 "github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/testing/harness"
)

// restrictedNamespace creates a test namespace that enforces the restricted Pod Security Standard.
func restrictedNamespace(t *testing.T, env *harness.Env) string {
	t.Helper()
	ns := env.Namespace(t)
	var live corev1.Namespace
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, &live); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(live.DeepCopy())
	if live.Labels == nil {
		live.Labels = map[string]string{}
	}
	live.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	live.Labels["pod-security.kubernetes.io/enforce-version"] = "latest"
	if err := env.Client.Patch(t.Context(), &live, patch); err != nil {
		t.Fatalf("label namespace %s restricted: %v", ns, err)
	}
	return ns
}

// TestPodSecurityRestricted runs both operators in a namespace that enforces the restricted Pod
// Security Standard, with specs that exercise every pod-shaping field (replicas, ports, resources,
// user ID, password Secret). Pods are really created there by the ReplicaSet controller and admitted,
// so the Deployments become available and every object Ready; a server-side dry-run create of a Pod
// from each generated pod template is admitted too. A privileged pod is rejected in the same
// namespace, which shows the policy is enforced.
func TestPodSecurityRestricted(t *testing.T) {
	env := harness.Default()
	ns := restrictedNamespace(t, env)

	// Positive control: the namespace really refuses what restricted forbids.
	bad := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "privileged"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "example.com/c:1",
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
		}}},
	}
	err := env.Client.Create(t.Context(), bad, client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), "violates PodSecurity") {
		t.Fatalf("a privileged pod was not refused by PodSecurity in %s (error: %v)", ns, err)
	}

	for _, op := range reliability.Operators {
		reliability.StartManager(t, env.Config, env.Scheme, op.Setup, reliability.WithName(op.Name), reliability.WithNamespace(ns))
		reliability.DeleteAtCleanup(t, env.Client, op, ns)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pw"},
		StringData: map[string]string{"password": "not-checked-here"},
	}
	if err := env.Client.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		&memcachedv1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache-plain"}, Spec: memcachedv1.MemcachedSpec{Size: 1}},
		&memcachedv1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache-tuned"}, Spec: memcachedv1.MemcachedSpec{
			Size: 3, Port: 12000, CacheSizeMB: 128, MaxConnections: 4096, MaxUnavailable: ptr.To[int32](1),
			ImagePullPolicy: corev1.PullIfNotPresent,
			Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("160Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("192Mi")},
			},
		}},
		&welcomev1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "site-plain"}, Spec: welcomev1.WelcomeSpec{Name: "Plain"}},
		&welcomev1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "site-full"}, Spec: welcomev1.WelcomeSpec{
			Name: "Full", Replicas: ptr.To[int32](2), Port: 9090, UserID: ptr.To[int64](4242),
			Groups: []string{"admins"}, Email: "full@example.com",
			PasswordSecretRef: &welcomev1.SecretKeyRef{Name: "pw", Key: "password"},
		}},
	}
	for _, o := range objs {
		if err := env.Client.Create(t.Context(), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	for _, op := range reliability.Operators {
		reliability.WaitConverged(t, env.Client, reliability.Expectation{Operator: op, Namespace: ns}, convergeTimeout)
	}

	var deployments appsv1.DeploymentList
	mustList(t, env.Client, ns, &deployments)
	wantPods := int32(0)
	for _, d := range deployments.Items {
		wantPods += ptr.Deref(d.Spec.Replicas, 1)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: d.Name + "-dryrun-", Labels: d.Spec.Template.Labels},
			Spec:       d.Spec.Template.Spec,
		}
		if err := env.Client.Create(t.Context(), pod, client.DryRunAll); err != nil {
			t.Errorf("pod template of Deployment %s is not admitted as restricted: %v", d.Name, err)
		}
	}
	var pods corev1.PodList
	mustList(t, env.Client, ns, &pods)
	running := int32(0)
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	if running < wantPods || len(deployments.Items) != len(objs) {
		t.Errorf("%d pods running for %d Deployments, want %d pods for %d", running, len(deployments.Items), wantPods, len(objs))
	}
	t.Logf("FIGURES pod security: %d pod templates admitted under restricted (dry-run) and %d pods really created and running; 1 privileged pod refused",
		len(deployments.Items), running)
}
