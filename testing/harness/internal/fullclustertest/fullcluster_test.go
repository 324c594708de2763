//go:build integration

package fullclustertest

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/testing/cluster"
	"github.com/convergo-dev/convergo/testing/harness"
)

func TestMain(m *testing.M) {
	harness.Main(m, harness.WithFullCluster(cluster.WithNodes(1)), harness.WithCRDPaths("../../testdata/crds"),
		harness.WithWebhooks("../../testdata/webhook"))
}

func TestClusterIsExposed(t *testing.T) {
	env := harness.Default()
	cl := env.Cluster()
	if cl == nil {
		t.Fatal("Cluster() is nil in full-cluster mode")
	}
	if len(cl.Nodes) != 1 {
		t.Errorf("nodes = %v, want 1", cl.Nodes)
	}
	if env.KubeconfigPath != cl.KubeconfigPath {
		t.Errorf("KubeconfigPath = %q, want the cluster's %q", env.KubeconfigPath, cl.KubeconfigPath)
	}
	if tails := env.LogTails(5); !strings.Contains(tails, "kube-apiserver") {
		t.Errorf("LogTails does not include kube-apiserver:\n%s", tails)
	}
}

func TestNamespaceDeletionCompletes(t *testing.T) {
	env := harness.Default()
	var name string
	t.Run("inner", func(t *testing.T) { name = env.Namespace(t) })
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	harness.WaitForDeletion(t, env.Client, ns, 2*time.Minute)
}

func TestGarbageCollection(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	if err := env.Client.Create(t.Context(), owner); err != nil {
		t.Fatal(err)
	}
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: "child",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}},
	}}
	if err := env.Client.Create(t.Context(), child); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(t.Context(), owner); err != nil {
		t.Fatal(err)
	}
	harness.WaitForDeletion(t, env.Client, child, 2*time.Minute)
}

func TestDeploymentBecomesAvailable(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.invalid/web:1"}}},
			},
		},
	}
	if err := env.Client.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	harness.WaitForObject(t, env.Client, client.ObjectKeyFromObject(d), d, 2*time.Minute, func(d *appsv1.Deployment) bool {
		return d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas == 2
	})
}

func TestCRDInstalled(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	w := &unstructured.Unstructured{}
	w.SetAPIVersion("harness.convergo.dev/v1")
	w.SetKind("Widget")
	w.SetNamespace(ns)
	w.SetName("w")
	if err := env.Client.Create(t.Context(), w); err != nil {
		t.Fatalf("create widget: %v", err)
	}
}

// envFail makes TestFailOnPurpose fail, to check what Main prints for a failed run.
const envFail = "CONVERGO_FULLCLUSTER_FAIL_ON_PURPOSE"

func TestFailOnPurpose(t *testing.T) {
	if os.Getenv(envFail) == "" {
		t.Skip("only in the re-run of TestMainPrintsLogTailsOnFailure")
	}
	t.Error("failing on purpose")
}

func TestMainPrintsLogTailsOnFailure(t *testing.T) {
	if os.Getenv(envFail) != "" {
		t.Skip("inside the re-run")
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestFailOnPurpose$")
	cmd.Env = append(os.Environ(), envFail+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("re-run: err = %v, want a failing exit code; output:\n%s", err, out)
	}
	for _, want := range []string{"failing on purpose", "control-plane logs", "kube-apiserver", "kube-controller-manager", "kwok"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output of a failed run does not contain %q:\n%s", want, out)
		}
	}
}
