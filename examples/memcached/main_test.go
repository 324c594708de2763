//go:build integration

package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	"github.com/convergo-dev/convergo/reconcile/operator"
	"github.com/convergo-dev/convergo/testing/harness"
)

// testMode makes a re-run of this test binary start its control plane differently.
const testMode = "MEMCACHED_TEST_MODE"

// TestMain starts a real kube-apiserver and etcd with the Memcached CRD and the defaulting webhook's
// configuration (config/webhook), pointed at the port where the tests run the operator's webhook
// server; in TestRunWithoutWebhooks's re-run, with the CRD only.
func TestMain(m *testing.M) {
	opts := []harness.Option{harness.WithCRDPaths("config/crd/bases"), harness.WithSchemeAdders(v1alpha1.AddToScheme)}
	if os.Getenv(testMode) != "without-webhooks" {
		opts = append(opts, harness.WithWebhooks("config/webhook"))
	}
	harness.Main(m, opts...)
}

// startOperator runs the operator's main loop against env's kubeconfig file, as a user would, with f,
// until the test ends; the cleanup checks that it stopped cleanly.
func startOperator(t *testing.T, env *harness.Env, f operator.Flags) {
	t.Helper()
	t.Setenv("KUBECONFIG", env.KubeconfigPath)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, f) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
}

// TestRun runs the operator with its webhook server where the harness pointed the webhook
// configuration, and checks that a Memcached created through the API server gets its memory sized by
// the defaulting webhook and that the operator reconciles it.
func TestRun(t *testing.T) {
	env := harness.Default()
	hooks := env.WebhookOptions()
	startOperator(t, env, operator.Flags{ProbeAddr: "0", Webhook: webhook.Options{Host: hooks.Host, Port: hooks.Port, CertDir: hooks.CertDir}})
	env.WaitForWebhookServer(t, time.Minute)

	ns := env.Namespace(t)
	mc := &v1alpha1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"}, Spec: v1alpha1.MemcachedSpec{Size: 1}}
	if err := env.Client.Create(t.Context(), mc); err != nil {
		t.Fatal(err)
	}
	// The schema's defaults, 64 MiB of cache and 1024 connections, make 104Mi.
	want := &corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("104Mi")},
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("104Mi")},
	}
	if diff := cmp.Diff(want, mc.Spec.Resources); diff != "" {
		t.Errorf("spec.resources of the created Memcached (-want +got):\n%s", diff)
	}
	var deploy appsv1.Deployment
	harness.WaitForObject(t, env.Client, client.ObjectKeyFromObject(mc), &deploy, time.Minute, nil)
	if diff := cmp.Diff(*want, deploy.Spec.Template.Spec.Containers[0].Resources); diff != "" {
		t.Errorf("resources of the memcached container (-want +got):\n%s", diff)
	}
}

// TestRunWithoutWebhooks runs the operator with ENABLE_WEBHOOKS=false against a cluster that has the
// CRD but not the webhook configuration (kubebuilder's `make install` then `make run
// ENABLE_WEBHOOKS=false`): it starts without serving certificates, and reconciles a Memcached, which
// keeps the resources it was created with. It re-runs this test binary with such a cluster (controller
// names are unique within a process, so the operator runs once per process).
func TestRunWithoutWebhooks(t *testing.T) {
	if os.Getenv(testMode) == "" {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestRunWithoutWebhooks$", "-test.v")
		cmd.Env = append(os.Environ(), testMode+"=without-webhooks", "ENABLE_WEBHOOKS=false")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestRunWithoutWebhooks") {
			t.Fatalf("re-run without webhooks: %v; output:\n%s", err, out)
		}
		return
	}
	env := harness.Default()
	// An empty certificate directory: with the webhook enabled its server would fail to start.
	startOperator(t, env, operator.Flags{ProbeAddr: "0", Webhook: webhook.Options{CertDir: t.TempDir()}})

	ns := env.Namespace(t)
	mc := &v1alpha1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"}, Spec: v1alpha1.MemcachedSpec{Size: 1}}
	if err := env.Client.Create(t.Context(), mc); err != nil {
		t.Fatal(err)
	}
	if mc.Spec.Resources != nil {
		t.Errorf("spec.resources = %v, want none: nothing defaults it without the webhook", mc.Spec.Resources)
	}
	harness.WaitForObject(t, env.Client, client.ObjectKeyFromObject(mc), &appsv1.Deployment{}, time.Minute, nil)
}
