package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/bench"
	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/sharding"
	"github.com/convergo-dev/convergo/testing/cluster"
	"github.com/convergo-dev/convergo/testing/harness"
)

func main() {
	n := flag.Int("n", 1500, "number of Welcomes")
	replicas := flag.Int("replicas", 3, "number of sharded replicas")
	out := flag.String("out", "", "directory to write the report into (also printed)")
	timeout := flag.Duration("timeout", 20*time.Minute, "bound of each phase")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	report, err := run(ctx, *n, *replicas, *timeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shardbench:", err)
		os.Exit(1)
	}
	fmt.Print(report)
	if *out != "" {
		path, err := bench.SaveReport(*out, fmt.Sprintf("sharding-n%d", *n), report)
		if err != nil {
			fmt.Fprintln(os.Stderr, "shardbench:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "wrote", path)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

func run(ctx context.Context, n, replicas int, timeout time.Duration) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	logf("starting the local cluster (%d kwok nodes)", bench.NodesFor(n))
	env, err := harness.Start(ctx,
		harness.WithFullCluster(cluster.WithNodes(bench.NodesFor(n))),
		harness.WithCRDPaths(filepath.Join(root, "examples/welcome/config/crd/bases")),
		harness.WithSchemeAdders(v1alpha1.AddToScheme))
	if err != nil {
		return "", fmt.Errorf("start the local cluster: %w", err)
	}
	defer func() { _ = env.Stop() }()
	dir, err := os.MkdirTemp("", "shardbench")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	binary := filepath.Join(dir, "welcome")
	logf("building the Welcome operator")
	build := exec.CommandContext(ctx, "go", "build", "-o", binary, "./examples/welcome")
	build.Dir = root
	if b, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./examples/welcome: %w\n%s", err, b)
	}
	c := env.Client
	ns := "shardbench"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return "", fmt.Errorf("create namespace: %w", err)
	}
	logf("creating %d Welcomes", n)
	if err := createWelcomes(ctx, c, ns, n); err != nil {
		return "", err
	}
	kubeconfig := env.Cluster().KubeconfigPath

	logf("one unsharded replica")
	single, err := start(ctx, binary, kubeconfig, filepath.Join(dir, "single.log"))
	if err != nil {
		return "", err
	}
	if err := waitReady(ctx, c, ns, n, nil, timeout); err != nil {
		single.stop()
		return "", fmt.Errorf("unsharded: %w (log %s)", err, single.log)
	}
	singleHeap, err := single.heap(ctx)
	single.stop()
	if err != nil {
		return "", err
	}

	logf("%d sharded replicas", replicas)
	var members []string
	var procs []*proc
	for i := range replicas {
		name := fmt.Sprintf("welcome-%d", i)
		members = append(members, name)
		p, err := start(ctx, binary, kubeconfig, filepath.Join(dir, name+".log"),
			"--shard-ring=welcome", "--shard-member="+name, "--shard-namespace="+ns)
		if err != nil {
			return "", err
		}
		defer p.stop()
		procs = append(procs, p)
	}
	ring := sharding.NewRing(members)
	if err := waitReady(ctx, c, ns, n, ring, timeout); err != nil {
		return "", fmt.Errorf("sharded: %w", err)
	}
	owned := map[string]int{}
	var ws v1alpha1.WelcomeList
	if err := c.List(ctx, &ws, client.InNamespace(ns)); err != nil {
		return "", err
	}
	for _, w := range ws.Items {
		owned[w.Labels[sharding.Label("welcome")]]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Sharding the Welcome operator: heap per replica\n\n")
	fmt.Fprintf(&b, "`go run ./bench/cmd/shardbench -n %d -replicas %d` on %s; %d Welcomes (a ConfigMap, a Deployment and a Service each), Ready.\n\n", n, replicas, time.Now().Format("2006-01-02"), n)
	fmt.Fprintf(&b, "| process | Welcomes | live heap (MiB) | heap in use (MiB) | live heap / unsharded |\n| --- | ---: | ---: | ---: | ---: |\n")
	fmt.Fprintf(&b, "| unsharded | %d | %.1f | %.1f | 1.00 |\n", n, mib(singleHeap.alloc), mib(singleHeap.inuse))
	worst := 0.0
	for i, p := range procs {
		h, err := p.heap(ctx)
		if err != nil {
			return "", err
		}
		ratio := float64(h.alloc) / float64(singleHeap.alloc)
		worst = max(worst, ratio)
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.1f | %.2f |\n", members[i], owned[members[i]], mib(h.alloc), mib(h.inuse), ratio)
	}
	fmt.Fprintf(&b, "\nLargest replica: %.2fx the unsharded replica's live heap (target: at most 0.45x).\n", worst)
	return b.String(), nil
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func createWelcomes(ctx context.Context, c client.Client, ns string, n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 8)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			w := &v1alpha1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%05d", i), Namespace: ns},
				Spec: v1alpha1.WelcomeSpec{Name: fmt.Sprintf("user %d", i)}}
			if err := c.Create(ctx, w); err != nil {
				errs <- fmt.Errorf("create welcome %s: %w", w.Name, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return errors.Join(slices(errs)...)
}

func slices(ch chan error) []error {
	var out []error
	for e := range ch {
		out = append(out, e)
	}
	return out
}

// waitReady waits until n Welcomes are Ready at their generation, each labelled with the member
// ring assigns it to when ring is set.
func waitReady(ctx context.Context, c client.Client, ns string, n int, ring *sharding.Ring, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ""
	for {
		var ws v1alpha1.WelcomeList
		if err := c.List(ctx, &ws, client.InNamespace(ns)); err == nil {
			ready := 0
			for _, w := range ws.Items {
				cond := meta.FindStatusCondition(w.Status.Conditions, "Ready")
				if cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != w.Generation {
					continue
				}
				if ring != nil && w.Labels[sharding.Label("welcome")] != ring.Owner(w.UID) {
					continue
				}
				ready++
			}
			last = fmt.Sprintf("%d of %d ready", ready, n)
			if ready == n {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait until ready: %s: %w", last, ctx.Err())
		case <-time.After(2 * time.Second):
			logf("%s", last)
		}
	}
}

type proc struct {
	cmd   *exec.Cmd
	pprof string
	log   string
	once  sync.Once
}

// start runs the operator binary with args, its profiler on a free local port.
func start(ctx context.Context, binary, kubeconfig, logPath string, args ...string) (*proc, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	_ = l.Close()
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, binary, append([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--pprof-bind-address=" + addr}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}
	return &proc{cmd: cmd, pprof: addr, log: logPath}, nil
}

// stop ends the process gracefully (its Lease released) and waits for it.
func (p *proc) stop() {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
	})
}

type heapStats struct{ alloc, inuse uint64 }

// heap returns the process's live heap after a garbage collection: the smallest of three reads.
func (p *proc) heap(ctx context.Context) (heapStats, error) {
	best := heapStats{}
	for i := range 3 {
		h, err := p.readHeap(ctx)
		if err != nil {
			return heapStats{}, err
		}
		if i == 0 || h.alloc < best.alloc {
			best = h
		}
	}
	return best, nil
}

func (p *proc) readHeap(ctx context.Context) (heapStats, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.pprof+"/debug/pprof/heap?debug=1&gc=1", nil)
	if err != nil {
		return heapStats{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return heapStats{}, fmt.Errorf("read heap of %s: %w", p.cmd.Path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	var h heapStats
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
			h.alloc, _ = strconv.ParseUint(v, 10, 64)
		}
		if v, ok := strings.CutPrefix(line, "# HeapInuse = "); ok {
			h.inuse, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	if h.alloc == 0 {
		return h, fmt.Errorf("read heap of %s: no HeapAlloc in the profile", p.cmd.Path)
	}
	return h, sc.Err()
}

// repoRoot is the module's root: the working directory or one of its parents holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run shardbench inside the convergo module")
		}
		dir = parent
	}
}
