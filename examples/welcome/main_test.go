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
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/reconcile/operator"
	"github.com/convergo-dev/convergo/sharding"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestMain starts a real kube-apiserver and etcd with the Welcome CRD.
func TestMain(m *testing.M) {
	harness.Main(m,
		harness.WithCRDPaths("config/crd/bases"),
		harness.WithSchemeAdders(v1alpha1.AddToScheme),
	)
}

// TestRun runs the operator's main loop against a kubeconfig file, as a user would, and checks that it
// reconciles a Welcome and stops cleanly.
func TestRun(t *testing.T) {
	env := harness.Default()
	t.Setenv("KUBECONFIG", env.KubeconfigPath)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, flags{Flags: operator.Flags{ProbeAddr: "0"}}) }()

	ns := env.Namespace(t)
	mc := &v1alpha1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice"}, Spec: v1alpha1.WelcomeSpec{Name: "Alice"}}
	if err := env.Client.Create(t.Context(), mc); err != nil {
		t.Fatal(err)
	}
	harness.WaitForObject(t, env.Client, client.ObjectKeyFromObject(mc), &appsv1.Deployment{}, time.Minute, nil)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
}

// runMode makes a re-run of this test binary run the operator differently (controller names are
// unique within a process, so the operator's main runs once per process).
const runMode = "WELCOME_TEST_RUN"

// TestRunSharded runs the operator's main loop with --shard-ring, as one replica of a StatefulSet
// would, and checks that it claims a new Welcome, labels it and its children with its member, holds
// its Lease, and reconciles the Welcome. It re-runs this test binary (see runMode).
func TestRunSharded(t *testing.T) {
	if os.Getenv(runMode) == "" {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestRunSharded$", "-test.v")
		cmd.Env = append(os.Environ(), runMode+"=sharded")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestRunSharded") {
			t.Fatalf("re-run sharded: %v; output:\n%s", err, out)
		}
		return
	}
	env := harness.Default()
	ns := env.Namespace(t)
	t.Setenv("KUBECONFIG", env.KubeconfigPath)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, flags{Flags: operator.Flags{ProbeAddr: "0"}, shardRing: "welcome", shardMember: "welcome-0", shardNamespace: ns})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})

	w := &v1alpha1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice"}, Spec: v1alpha1.WelcomeSpec{Name: "Alice"}}
	if err := env.Client.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	key := sharding.Label("welcome")
	var deploy appsv1.Deployment
	harness.WaitForObject(t, env.Client, client.ObjectKeyFromObject(w), &deploy, time.Minute, func(d *appsv1.Deployment) bool {
		return d.Labels[key] == "welcome-0"
	})
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	var lease coordinationv1.Lease
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "welcome-welcome-0"}, &lease); err != nil {
		t.Fatal(err)
	}
	got := []string{w.Labels[key], deploy.Labels[key], ptr.Deref(lease.Spec.HolderIdentity, "")}
	if diff := cmp.Diff([]string{"welcome-0", "welcome-0", "welcome-0"}, got); diff != "" {
		t.Errorf("the Welcome's label, its Deployment's label, the Lease's holder (-want +got):\n%s", diff)
	}
}

// TestRunShardFlags: flags that cannot make a sharded replica are refused with what to change,
// before anything starts.
func TestRunShardFlags(t *testing.T) {
	env := harness.Default()
	t.Setenv("KUBECONFIG", env.KubeconfigPath)
	tests := map[string]struct {
		f    flags
		want string
	}{
		"with leader election": {flags{shardRing: "welcome", shardMember: "a", shardNamespace: "ns", Flags: operator.Flags{LeaderElect: true}}, "drop --leader-elect"},
		"no member":            {flags{shardRing: "welcome", shardNamespace: "ns"}, "--shard-member"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := run(t.Context(), tc.f)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
