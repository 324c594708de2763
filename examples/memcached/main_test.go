package main

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestMain starts a real kube-apiserver and etcd with the Memcached CRD.
func TestMain(m *testing.M) {
	harness.Main(m,
		harness.WithCRDPaths("config/crd/bases"),
		harness.WithSchemeAdders(v1alpha1.AddToScheme),
	)
}

// TestRun runs the operator's main loop against a kubeconfig file, as a user would, and checks that it
// reconciles a Memcached and stops cleanly.
func TestRun(t *testing.T) {
	env := harness.Default()
	t.Setenv("KUBECONFIG", env.KubeconfigPath)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, flags{metricsAddr: "0", probeAddr: "0"}) }()

	ns := env.Namespace(t)
	mc := &v1alpha1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"}, Spec: v1alpha1.MemcachedSpec{Size: 1}}
	if err := env.Client.Create(t.Context(), mc); err != nil {
		t.Fatal(err)
	}
	harness.WaitForObject(t, env.Client, client.ObjectKeyFromObject(mc), &appsv1.Deployment{}, time.Minute, nil)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
}
