//go:build integration

package deploy

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/testing/cluster"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestDeployAndUndeploy runs what `make deploy-<example>` and `make undeploy-<example>` run against a
// full local cluster (kwok nodes, as `make demo` starts): Deploy applies the manifests, waits for the
// Deployment to be Available, starts the operator from its built binary as a local process that
// impersonates its ServiceAccount, and converges the sample; Undeploy leaves nothing behind: no
// sample, no Secret, no object of config/default, no process. For memcached the local operator is
// killed before Undeploy, which must then start one to release the sample's finalizer.
func TestDeployAndUndeploy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both operators and starts a full local cluster")
	}
	env, err := harness.Start(t.Context(), harness.WithFullCluster(cluster.WithNodes(1)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop the cluster: %v", err)
		}
	})
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		example      string
		killOperator bool
	}{
		{example: "welcome"},
		{example: "memcached", killOperator: true},
	} {
		t.Run(tc.example, func(t *testing.T) {
			ctx := t.Context()
			out := &logWriter{t: t}
			opts := Options{Root: root, Example: tc.example, Kubeconfig: env.KubeconfigPath, RunDir: t.TempDir(), Timeout: timeout, Out: out}
			binary := filepath.Join(opts.RunDir, tc.example+"-operator")
			t.Cleanup(func() {
				out.stop()
				if lo := runningLocal(opts.RunDir, binary); lo != nil {
					t.Errorf("the local operator (pid %d) still runs at the end of the test", lo.pid)
					_ = lo.stop()
				}
			})

			if err := Deploy(ctx, opts); err != nil {
				t.Fatalf("Deploy: %v", err)
			}
			lo := runningLocal(opts.RunDir, binary)
			if lo == nil {
				t.Fatalf("no local operator runs after Deploy; its log:\n%s", logTail(filepath.Join(opts.RunDir, logFile), 30))
			}
			op, err := LoadOperator(filepath.Join(root, "examples", tc.example), "")
			if err != nil {
				t.Fatal(err)
			}
			checkOperatorKubeconfig(t, filepath.Join(opts.RunDir, kubeconfigFile), op)
			samples, err := op.Samples("default")
			if err != nil {
				t.Fatal(err)
			}
			if err := WaitReady(ctx, env.Client, samples, timeout); err != nil {
				t.Fatal(err)
			}
			// Deploying again replaces the local operator and changes nothing else.
			if err := Deploy(ctx, opts); err != nil {
				t.Fatalf("Deploy again: %v", err)
			}
			if lo.alive() {
				t.Errorf("the operator of the first Deploy (pid %d) still runs after the second", lo.pid)
			}
			lo = runningLocal(opts.RunDir, binary)
			if lo == nil {
				t.Fatal("no local operator runs after the second Deploy")
			}
			if tc.killOperator {
				if err := syscall.Kill(lo.pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				harness.Eventually(t, timeout, func() (bool, string) { return !lo.alive(), "the killed operator still runs" })
			}

			if err := Undeploy(ctx, opts); err != nil {
				t.Fatalf("Undeploy: %v", err)
			}
			if runningLocal(opts.RunDir, binary) != nil || lo.alive() {
				t.Error("a local operator still runs after Undeploy")
			}
			secrets, err := Prerequisites(samples)
			if err != nil {
				t.Fatal(err)
			}
			var left []string
			check := append(append([]*unstructured.Unstructured{}, samples...), op.Objects...)
			for _, s := range secrets {
				u := &unstructured.Unstructured{}
				u.SetAPIVersion("v1")
				u.SetKind("Secret")
				u.SetNamespace(s.Namespace)
				u.SetName(s.Name)
				check = append(check, u)
			}
			for _, o := range check {
				live := &unstructured.Unstructured{}
				live.SetGroupVersionKind(o.GroupVersionKind())
				err := env.Client.Get(context.WithoutCancel(ctx), client.ObjectKeyFromObject(o), live)
				if err == nil {
					left = append(left, objectID(o)+" (finalizers "+strings.Join(live.GetFinalizers(), ",")+")")
				} else if !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
					t.Errorf("get %s: %v", objectID(o), err)
				}
			}
			if len(left) > 0 {
				t.Errorf("left after Undeploy: %s", strings.Join(left, ", "))
			}
		})
	}
}

// checkOperatorKubeconfig checks that the local operator's kubeconfig impersonates its
// ServiceAccount.
func checkOperatorKubeconfig(t *testing.T, path string, op *Operator) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(op.UserName(), cfg.Impersonate.UserName); diff != "" {
		t.Errorf("the local operator's identity (-want +got):\n%s", diff)
	}
}

// logWriter sends what Deploy and Undeploy print to the test's log, line by line, until stop.
type logWriter struct {
	t       *testing.T
	mu      sync.Mutex
	pending bytes.Buffer
	done    bool
}

// Write implements io.Writer.
func (w *logWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return len(b), nil
	}
	w.pending.Write(b)
	for {
		line, err := w.pending.ReadString('\n')
		if err != nil {
			w.pending.WriteString(line)
			break
		}
		w.t.Log(strings.TrimRight(line, "\n"))
	}
	return len(b), nil
}

func (w *logWriter) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
}
