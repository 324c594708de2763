//go:build integration

package cluster

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// faultCluster starts a small private cluster (one node, no scheduler) for a test that breaks it,
// and stops it at cleanup, failing the test if Stop reports an error (a component that crashed, or
// an expected exit reported as one).
func faultCluster(t *testing.T) (*Cluster, kubernetes.Interface) {
	t.Helper()
	c, err := Start(t.Context(), WithNodes(1), WithoutScheduler(), WithLogger(testLogger(t)))
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(c.LogTails(30))
		}
		pids, ports := pidsOf(c), c.ports.numbers()
		if err := c.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
		if err := checkReleased(pids, ports); err != nil {
			t.Errorf("after stop: %v", err)
		}
	})
	// Short client timeouts: requests to a dead API server or a frozen etcd must fail, not hang.
	cfg := rest.CopyConfig(c.Config)
	cfg.Timeout = 5 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, cs
}

func configMap(ns, name string, owner *corev1.ConfigMap) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Data:       map[string]string{"k": name},
	}
	if owner != nil {
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}
	}
	return cm
}

// TestRestartAPIServer kills the API server with SIGKILL and starts it again on the same etcd:
// requests fail while it is down; afterwards the objects stored before are still there (same UID),
// the admin config still works, and the controller-manager has reconnected (garbage collection of an
// owned object created after the restart happens).
func TestRestartAPIServer(t *testing.T) {
	c, cs := faultCluster(t)
	ctx := t.Context()
	ns := newNamespace(t, cs)
	before, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, "before", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	if err := c.KillAPIServer(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "before", metav1.GetOptions{}); err == nil {
		t.Error("a request succeeded while the API server was killed")
	}
	if err := c.KillAPIServer(); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("second KillAPIServer error = %v, want one saying it is not running", err)
	}

	if err := c.StartAPIServer(ctx); err != nil {
		t.Fatalf("start again: %v", err)
	}
	if err := c.StartAPIServer(ctx); err == nil || !strings.Contains(err.Error(), "is running") {
		t.Errorf("StartAPIServer on a running API server: error = %v, want one saying it is running", err)
	}
	got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "before", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the ConfigMap stored before the kill: %v", err)
	}
	if got.UID != before.UID {
		t.Errorf("ConfigMap UID after restart = %s, want %s (etcd data lost?)", got.UID, before.UID)
	}

	// The controller-manager survived the outage and watches again: the garbage collector removes a
	// child whose owner is deleted after the restart.
	owner, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, "owner", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create after restart: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, "child", owner), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, func() (bool, string) {
		_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "child", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, "child of the deleted owner still there (get error: " + errString(err) + ")"
	})

	// A second kill and restart works too, and the log keeps every run.
	if err := c.RestartAPIServer(ctx); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "before", metav1.GetOptions{}); err != nil {
		t.Errorf("get after the second restart: %v", err)
	}
	log, err := os.ReadFile(c.logPath(APIServer))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), "kube-apiserver restarted at"); n != 2 {
		t.Errorf("API server log has %d restart markers, want 2", n)
	}
}

// TestPauseEtcd freezes etcd: a write cannot complete while it is paused and works again after
// ResumeEtcd; a cluster stopped while etcd is paused stops cleanly.
func TestPauseEtcd(t *testing.T) {
	c, cs := faultCluster(t)
	ctx := t.Context()
	// The private cluster's default namespace: a test namespace would be deleted at cleanup, before
	// the stop, while etcd is paused.
	ns := metav1.NamespaceDefault

	if err := c.PauseEtcd(); err != nil {
		t.Fatalf("pause: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, err := cs.CoreV1().ConfigMaps(ns).Create(short, configMap(ns, "during", nil), metav1.CreateOptions{})
	cancel()
	if err == nil {
		t.Error("a write succeeded while etcd was paused")
	}
	if err := c.ResumeEtcd(); err != nil {
		t.Fatalf("resume: %v", err)
	}
	// The write that timed out on the client may still have been stored once etcd resumed; what
	// matters is that writes work again.
	eventually(t, time.Minute, func() (bool, string) {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, "after", nil), metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), "create after resume: " + errString(err)
	})

	// PauseEtcdFor resumes on its own; a cancelled context resumes early and says so.
	if err := c.PauseEtcdFor(ctx, time.Second); err != nil {
		t.Errorf("PauseEtcdFor: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.PauseEtcdFor(cancelled, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("PauseEtcdFor with a cancelled context: error = %v, want context.Canceled", err)
	}
	eventually(t, time.Minute, func() (bool, string) {
		_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "after", metav1.GetOptions{})
		return err == nil, "get after PauseEtcdFor: " + errString(err)
	})

	// Stop (at cleanup) must cope with a frozen etcd.
	if err := c.PauseEtcd(); err != nil {
		t.Fatalf("pause before stop: %v", err)
	}
}

// TestFaultHooksOnStoppedCluster checks that the hooks refuse to act on a cluster that was stopped.
func TestFaultHooksOnStoppedCluster(t *testing.T) {
	c := &Cluster{stopped: true}
	cases := map[string]func() error{
		"KillAPIServer":  c.KillAPIServer,
		"StartAPIServer": func() error { return c.StartAPIServer(t.Context()) },
		"PauseEtcd":      c.PauseEtcd,
		"ResumeEtcd":     c.ResumeEtcd,
	}
	for name, call := range cases {
		t.Run(name, func(t *testing.T) {
			if err := call(); err == nil || !strings.Contains(err.Error(), "stopped") {
				t.Errorf("error = %v, want one saying the cluster is stopped", err)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}
