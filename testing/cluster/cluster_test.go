//go:build integration

package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/convergo-dev/convergo/testing/assets"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/pprof/profile"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// shared is the one cluster of this package, started by the first test that needs it and stopped
// by TestMain, which then checks that the processes are gone and the ports free.
var shared struct {
	once    sync.Once
	cluster *Cluster
	err     error
	startup time.Duration
}

func TestMain(m *testing.M) {
	// `go test ./...` without `make test` still finds (or builds) the binaries; the library itself
	// never imports testing/assets, only this test does.
	if os.Getenv(BinaryDirEnv) == "" {
		dir, err := assets.Ensure(context.Background(), assets.WithComponents(assets.ClusterComponents()...), assets.WithProgress(os.Stderr))
		if err != nil {
			fmt.Fprintf(os.Stderr, "control-plane binaries: %v\n", err)
			os.Exit(1)
		}
		os.Setenv(BinaryDirEnv, dir)
	}
	code := m.Run()
	if c := shared.cluster; c != nil {
		if code != 0 {
			fmt.Fprint(os.Stderr, c.LogTails(30))
		}
		pids := pidsOf(c)
		ports := c.ports.numbers()
		runDir := c.RunDir
		begin := time.Now()
		if err := c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: stop shared cluster: %v\n", err)
			code = 1
		}
		fmt.Printf("shared cluster: start-up %s, stop %s\n", shared.startup.Round(time.Millisecond),
			time.Since(begin).Round(time.Millisecond))
		if err := checkReleased(pids, ports); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: after Stop: %v\n", err)
			code = 1
		}
		if _, err := os.Stat(runDir); !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(os.Stderr, "FAIL: temporary run dir %s not removed by Stop (stat: %v)\n", runDir, err)
			code = 1
		}
	}
	os.Exit(code)
}

// sharedCluster returns the package's cluster, starting it on first use. Start's context only
// bounds the start, so the first test's context is fine although the cluster outlives the test.
func sharedCluster(t *testing.T) (*Cluster, kubernetes.Interface) {
	t.Helper()
	shared.once.Do(func() {
		begin := time.Now()
		// Not testLogger(t): Stop logs after this test has finished.
		logger := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, "shared cluster:", prefix, args) },
			funcr.Options{Verbosity: 1})
		shared.cluster, shared.err = Start(t.Context(), WithLogger(logger))
		shared.startup = time.Since(begin)
		if shared.err == nil {
			t.Logf("full cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, %d nodes) started in %s",
				len(shared.cluster.Nodes), shared.startup.Round(time.Millisecond))
		}
	})
	if shared.err != nil {
		t.Fatalf("start shared cluster: %v", shared.err)
	}
	cs, err := kubernetes.NewForConfig(shared.cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	return shared.cluster, cs
}

func testLogger(t *testing.T) logr.Logger {
	return funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{Verbosity: 1})
}

// pidsOf returns the process ids of the running components.
func pidsOf(c *Cluster) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var pids []int
	for _, p := range c.procs {
		pids = append(pids, p.cmd.Process.Pid)
	}
	return pids
}

// waitForRestart waits until supervise has replaced the exited process old, and returns the new one.
func waitForRestart(t *testing.T, c *Cluster, old *process) *process {
	t.Helper()
	var next *process
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, p := range c.procs {
			if p.component == old.component && p != old {
				next = p
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%s was not restarted: %v", old.component, err)
	}
	return next
}

// checkReleased reports processes still alive and ports that cannot be bound.
func checkReleased(pids, ports []int) error {
	var errs []error
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("process %d still exists (kill -0: %v)", pid, err))
		}
	}
	for _, port := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			errs = append(errs, fmt.Errorf("port %d still in use: %w", port, err))
			continue
		}
		l.Close()
	}
	return errors.Join(errs...)
}

// processesUsing lists running processes whose command line mentions dir (Linux /proc only).
func processesUsing(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(cmdline), dir) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return out
}

// eventually polls check every 100 ms until it reports ok or timeout passes, then fails the test
// with the last observed state.
func eventually(t *testing.T, timeout time.Duration, check func() (ok bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := check()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s; last state: %s", timeout, state)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("test context done; last state: %s", state)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// newNamespace creates a fresh namespace, deleted when the test ends.
func newNamespace(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "cluster-test-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		// t.Context() is already canceled when cleanups run.
		ctx := context.WithoutCancel(t.Context())
		err := cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

func newDeployment(namespace, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}},
				},
			},
		},
	}
}

func deploymentAvailable(d *appsv1.Deployment) bool {
	if d.Status.ObservedGeneration != d.Generation || d.Spec.Replicas == nil {
		return false
	}
	want := *d.Spec.Replicas
	if d.Status.UpdatedReplicas != want || d.Status.ReadyReplicas != want || d.Status.AvailableReplicas != want {
		return false
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func TestDeploymentBecomesAvailable(t *testing.T) {
	c, cs := sharedCluster(t)
	ns := newNamespace(t, cs)
	cpuBefore := cpuTimes(t, c)
	dep, err := cs.AppsV1().Deployments(ns).Create(t.Context(), newDeployment(ns, "web", 3), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	begin := time.Now()
	eventually(t, 60*time.Second, func() (bool, string) {
		d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), dep.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return deploymentAvailable(d), fmt.Sprintf("generation %d, status %+v", d.Generation, d.Status)
	})
	t.Logf("deployment available %s after create", time.Since(begin).Round(time.Millisecond))
	pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	type podState struct {
		OnKwokNode bool
		Phase      corev1.PodPhase
		Ready      bool
		HasIP      bool
	}
	var got []podState
	for _, p := range pods.Items {
		ready := false
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady {
				ready = cond.Status == corev1.ConditionTrue
			}
		}
		got = append(got, podState{
			OnKwokNode: slices.Contains(c.Nodes, p.Spec.NodeName),
			Phase:      p.Status.Phase,
			Ready:      ready,
			HasIP:      p.Status.PodIP != "",
		})
	}
	want := slices.Repeat([]podState{{OnKwokNode: true, Phase: corev1.PodRunning, Ready: true, HasIP: true}}, 3)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}

	// Rolling out takes work from the API server, etcd and the controller-manager, and CPUTime shows it.
	// /proc counts CPU time in clock ticks (10 ms): a rollout that fast may cost a component less than
	// one, so the test rescales the Deployment until every component has used at least a tick.
	replicas := int32(3)
	eventually(t, 60*time.Second, func() (bool, string) {
		cpuAfter := cpuTimes(t, c)
		var idle []string
		for comp, before := range cpuBefore {
			if cpuAfter[comp] <= before {
				idle = append(idle, fmt.Sprintf("%s at %s", comp, before))
			}
		}
		if len(idle) == 0 {
			return true, ""
		}
		replicas = 5 - replicas // 3 <-> 2
		scale := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
		if _, err := cs.AppsV1().Deployments(ns).Patch(t.Context(), dep.Name, types.MergePatchType, []byte(scale), metav1.PatchOptions{}); err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("CPUTime has not grown for %v", idle)
	})
}

// cpuTimes reads the CPU time of the components that take part in every rollout.
func cpuTimes(t *testing.T, c *Cluster) map[Component]time.Duration {
	t.Helper()
	out := map[Component]time.Duration{}
	for _, comp := range []Component{APIServer, Etcd, ControllerManager} {
		d, err := c.CPUTime(comp)
		if err != nil {
			t.Fatal(err)
		}
		out[comp] = d
	}
	return out
}

func TestGarbageCollection(t *testing.T) {
	_, cs := sharedCluster(t)
	const holdFinalizer = "convergo.dev/test-hold"
	cases := map[string]struct {
		policy metav1.DeletionPropagation
		// foreground: the owner must stay (deleting, with the foregroundDeletion finalizer) while its
		// dependent exists; the dependent carries a finalizer of ours to hold it until we check.
		foreground bool
	}{
		"background": {policy: metav1.DeletePropagationBackground},
		"foreground": {policy: metav1.DeletePropagationForeground, foreground: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := newNamespace(t, cs)
			cms := cs.CoreV1().ConfigMaps(ns)
			owner, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create owner: %v", err)
			}
			dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: "dependent",
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
					BlockOwnerDeletion: ptr.To(true),
				}},
			}}
			if tc.foreground {
				dependent.Finalizers = []string{holdFinalizer}
			}
			if _, err := cms.Create(t.Context(), dependent, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create dependent: %v", err)
			}

			begin := time.Now()
			if err := cms.Delete(t.Context(), owner.Name, metav1.DeleteOptions{PropagationPolicy: &tc.policy}); err != nil {
				t.Fatalf("delete owner: %v", err)
			}
			if tc.foreground {
				// The garbage collector marks the dependent deleted; the owner waits for it.
				eventually(t, 30*time.Second, func() (bool, string) {
					d, err := cms.Get(t.Context(), dependent.Name, metav1.GetOptions{})
					if err != nil {
						return false, err.Error()
					}
					return d.DeletionTimestamp != nil, fmt.Sprintf("dependent deletionTimestamp %v", d.DeletionTimestamp)
				})
				o, err := cms.Get(t.Context(), owner.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatalf("owner must remain while its dependent exists: %v", err)
				}
				gotOwner := struct {
					Deleting   bool
					Finalizers []string
				}{o.DeletionTimestamp != nil, o.Finalizers}
				wantOwner := struct {
					Deleting   bool
					Finalizers []string
				}{true, []string{metav1.FinalizerDeleteDependents}}
				if diff := cmp.Diff(wantOwner, gotOwner); diff != "" {
					t.Errorf("owner during foreground deletion (-want +got):\n%s", diff)
				}
				patch := []byte(`[{"op":"test","path":"/metadata/finalizers/0","value":"` + holdFinalizer + `"},{"op":"remove","path":"/metadata/finalizers/0"}]`)
				if _, err := cms.Patch(t.Context(), dependent.Name, "application/json-patch+json", patch, metav1.PatchOptions{}); err != nil {
					t.Fatalf("release dependent: %v", err)
				}
			}
			for _, obj := range []string{dependent.Name, owner.Name} {
				eventually(t, 30*time.Second, func() (bool, string) {
					got, err := cms.Get(t.Context(), obj, metav1.GetOptions{})
					if apierrors.IsNotFound(err) {
						return true, ""
					}
					if err != nil {
						return false, err.Error()
					}
					return false, fmt.Sprintf("%s still exists: deletionTimestamp %v, finalizers %v", obj, got.DeletionTimestamp, got.Finalizers)
				})
			}
			t.Logf("owner and dependent gone %s after delete", time.Since(begin).Round(time.Millisecond))
		})
	}
}

func TestDeploymentForegroundDeletion(t *testing.T) {
	_, cs := sharedCluster(t)
	ns := newNamespace(t, cs)
	deps := cs.AppsV1().Deployments(ns)
	dep, err := deps.Create(t.Context(), newDeployment(ns, "fg", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	eventually(t, 60*time.Second, func() (bool, string) {
		d, err := deps.Get(t.Context(), dep.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return deploymentAvailable(d), fmt.Sprintf("status %+v", d.Status)
	})

	if err := deps.Delete(t.Context(), dep.Name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationForeground),
	}); err != nil {
		t.Fatalf("delete deployment: %v", err)
	}
	eventually(t, 60*time.Second, func() (bool, string) {
		d, err := deps.Get(t.Context(), dep.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("deployment still exists, finalizers %v", d.Finalizers)
	})
	// The ReplicaSet's owner reference blocks owner deletion: once the Deployment is gone, so is it.
	rss, err := cs.AppsV1().ReplicaSets(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list replicasets: %v", err)
	}
	var rsNames []string
	for _, rs := range rss.Items {
		rsNames = append(rsNames, rs.Name)
	}
	if diff := cmp.Diff([]string(nil), rsNames); diff != "" {
		t.Errorf("replicasets left after the deployment is gone (-want +got):\n%s", diff)
	}
	// Pods are finalized by kwok's pod-delete stage (there is no kubelet).
	eventually(t, 60*time.Second, func() (bool, string) {
		pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		return len(names) == 0, fmt.Sprintf("pods left: %v", names)
	})
}

func TestNamespaceDeletion(t *testing.T) {
	_, cs := sharedCluster(t)
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "cluster-ns-delete-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns.Name).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	dep, err := cs.AppsV1().Deployments(ns.Name).Create(t.Context(), newDeployment(ns.Name, "app", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	eventually(t, 60*time.Second, func() (bool, string) {
		d, err := cs.AppsV1().Deployments(ns.Name).Get(t.Context(), dep.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return deploymentAvailable(d), fmt.Sprintf("status %+v", d.Status)
	})

	begin := time.Now()
	if err := cs.CoreV1().Namespaces().Delete(t.Context(), ns.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete namespace: %v", err)
	}
	eventually(t, 90*time.Second, func() (bool, string) {
		got, err := cs.CoreV1().Namespaces().Get(t.Context(), ns.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
	})
	t.Logf("namespace gone %s after delete", time.Since(begin).Round(time.Millisecond))
}

func TestLogTails(t *testing.T) {
	c, _ := sharedCluster(t)
	tails := c.LogTails(5)
	var headers []string
	for line := range strings.SplitSeq(tails, "\n") {
		if strings.HasPrefix(line, "==> ") {
			headers = append(headers, line)
		}
	}
	want := []string{
		"==> etcd.log <==", "==> kube-apiserver.log <==", "==> kube-controller-manager.log <==",
		"==> kube-scheduler.log <==", "==> kwok.log <==",
	}
	if diff := cmp.Diff(want, headers); diff != "" {
		t.Errorf("LogTails headers (-want +got):\n%s\nfull output:\n%s", diff, tails)
	}
	if strings.Contains(tails, "(empty)") {
		t.Errorf("a component log is empty:\n%s", tails)
	}
}

func TestAdminKubeconfig(t *testing.T) {
	c, _ := sharedCluster(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := cs.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: NodeLabel + "=" + NodeLabelValue})
	if err != nil {
		t.Fatalf("list nodes through the admin kubeconfig: %v", err)
	}
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	if diff := cmp.Diff(c.Nodes, names); diff != "" {
		t.Errorf("kwok nodes (-want +got):\n%s", diff)
	}
}

// TestStopReleasesEverything starts its own small cluster (one node, no scheduler, a run dir of
// its own), kills kwok behind its back, and checks that Stop reports that crash, leaves no process
// or port behind, keeps a given run dir, and is idempotent.
func TestStopReleasesEverything(t *testing.T) {
	runDir := t.TempDir()
	begin := time.Now()
	c, err := Start(t.Context(), WithNodes(1), WithoutScheduler(), WithRunDir(runDir), WithLogger(testLogger(t)))
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Logf("small cluster (no scheduler, 1 node) started in %s", time.Since(begin).Round(time.Millisecond))
	pids, ports := pidsOf(c), c.ports.numbers()
	if got := len(pids); got != 4 {
		t.Errorf("%d processes running, want 4 (etcd, kube-apiserver, kube-controller-manager, kwok)", got)
	}
	if got := processesUsing(t, runDir); len(got) != len(pids) {
		t.Errorf("%d processes use the run dir, want %d: %v", len(got), len(pids), got)
	}

	// kwok that dies on its own is restarted on the same port, its log kept.
	killed := c.procs[len(c.procs)-1]
	if err := killed.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill kwok: %v", err)
	}
	<-killed.done
	restarted := waitForRestart(t, c, killed)
	pids = append(pids, restarted.cmd.Process.Pid)
	probe := &http.Client{Timeout: 5 * time.Second}
	healthz := "http://" + c.ports.kwok.addr() + "/healthz"
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return httpOK(probe, healthz, "")(ctx) == nil, nil
	}); err != nil {
		t.Errorf("restarted kwok never answered %s: %v", healthz, err)
	}
	log, err := os.ReadFile(c.logPath(Kwok))
	if err != nil {
		t.Fatal(err)
	}
	if want := "kwok exited on its own (signal: killed), restarted"; !strings.Contains(string(log), want) {
		t.Errorf("kwok log does not mark the restart with %q", want)
	}

	// Any other component that dies is left dead and reported.
	kcm := c.procs[len(c.procs)-2]
	if err := kcm.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill kube-controller-manager: %v", err)
	}
	<-kcm.done

	begin = time.Now()
	err = c.Stop()
	t.Logf("stopped in %s", time.Since(begin).Round(time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "kube-controller-manager exited on its own") {
		t.Errorf("Stop error = %v, want one reporting that kube-controller-manager exited on its own", err)
	}
	if err != nil && strings.Contains(err.Error(), "kwok") {
		t.Errorf("Stop error = %v, want none about the restarted kwok", err)
	}
	if err := checkReleased(pids, ports); err != nil {
		t.Error(err)
	}
	if got := processesUsing(t, runDir); len(got) != 0 {
		t.Errorf("processes still use the run dir after Stop: %v", got)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	// A run dir given by the caller is kept, logs included.
	var logs []string
	for _, comp := range []Component{Etcd, APIServer, ControllerManager, Scheduler, Kwok} {
		if _, err := os.Stat(filepath.Join(runDir, "logs", string(comp)+".log")); err == nil {
			logs = append(logs, string(comp))
		}
	}
	if diff := cmp.Diff([]string{"etcd", "kube-apiserver", "kube-controller-manager", "kwok"}, logs); diff != "" {
		t.Errorf("logs kept in the run dir (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(runDir, "kubeconfig")); err != nil {
		t.Errorf("admin kubeconfig not kept: %v", err)
	}
}

// TestStartFailureReportsComponent makes the API server fail and checks that Start names it, shows
// its log, and stops etcd, which had already started.
func TestStartFailureReportsComponent(t *testing.T) {
	runDir := t.TempDir()
	_, err := Start(t.Context(), WithRunDir(runDir), WithExtraArgs(APIServer, "--no-such-flag"))
	if err == nil {
		t.Fatal("Start succeeded with a bad API server flag")
	}
	var se *StartError
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *StartError", err)
	}
	if se.Component != APIServer {
		t.Errorf("failing component = %q, want %q; error: %v", se.Component, APIServer, err)
	}
	for _, want := range []string{"==> kube-apiserver.log <==", "no-such-flag"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "exited on its own") {
		t.Errorf("error repeats the failure as a stop error:\n%v", err)
	}
	if got := processesUsing(t, runDir); len(got) != 0 {
		t.Errorf("processes left after a failed start: %v", got)
	}
}

// TestStartRespectsContext gives Start less time than the API server needs: Start must give up
// with the context's error and leave no process behind.
func TestStartRespectsContext(t *testing.T) {
	runDir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	c, err := Start(ctx, WithRunDir(runDir))
	if err == nil {
		c.Stop()
		t.Fatal("Start succeeded within one second; want a deadline error")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Start error does not wrap context.DeadlineExceeded: %v", err)
	}
	if got := processesUsing(t, runDir); len(got) != 0 {
		t.Errorf("processes left after a canceled start: %v", got)
	}
}

// TestCPUProfile records a CPU profile of each component that serves one and checks that it is one:
// a CPU profile of the component's own binary, as long as asked. A component without a profiler is
// refused by name.
func TestCPUProfile(t *testing.T) {
	c, _ := sharedCluster(t)
	for _, comp := range []Component{APIServer, ControllerManager, Scheduler} {
		t.Run(string(comp), func(t *testing.T) {
			t.Parallel()
			data, err := c.CPUProfile(t.Context(), comp, 1500*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			p, err := profile.ParseData(data)
			if err != nil {
				t.Fatalf("parse the answer as a profile: %v", err)
			}
			var types []string
			for _, st := range p.SampleType {
				types = append(types, st.Type+"/"+st.Unit)
			}
			var binary string
			if len(p.Mapping) > 0 {
				binary = filepath.Base(p.Mapping[0].File)
			}
			got := []any{types, binary, time.Duration(p.DurationNanos).Round(time.Second)}
			want := []any{[]string{"samples/count", "cpu/nanoseconds"}, string(comp), 2 * time.Second}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("sample types, binary, duration (-want +got):\n%s", diff)
			}
		})
	}
	t.Run(string(Etcd), func(t *testing.T) {
		t.Parallel()
		_, err := c.CPUProfile(t.Context(), Etcd, time.Second)
		if err == nil || !strings.Contains(err.Error(), "only kube-apiserver, kube-controller-manager and kube-scheduler") {
			t.Errorf("CPUProfile(etcd) = %v, want an error naming the components that serve a profiler", err)
		}
	})
}

// TestMetrics reads each component's metrics and checks that they are its own: the API server's
// request counter, the controller-manager's deployment queue, the scheduler's queue of pending pods.
func TestMetrics(t *testing.T) {
	c, _ := sharedCluster(t)
	tests := []struct {
		comp Component
		want string
	}{
		{APIServer, "apiserver_request_total{"},
		{ControllerManager, `workqueue_adds_total{name="deployment"}`},
		{Scheduler, "scheduler_pending_pods{"},
	}
	for _, tc := range tests {
		t.Run(string(tc.comp), func(t *testing.T) {
			data, err := c.Metrics(t.Context(), tc.comp)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), tc.want) {
				t.Errorf("metrics of %s (%d bytes) lack %s", tc.comp, len(data), tc.want)
			}
		})
	}
}
