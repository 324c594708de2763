package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/convergo-dev/convergo/bench"
	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/sharding"
	"github.com/convergo-dev/convergo/testing/cluster"
	"github.com/convergo-dev/convergo/testing/harness"
)

// The example's defaults, which the members run with.
const (
	leaseDuration = 15 * time.Second
	retryPeriod   = 2 * time.Second
	ringName      = "welcome"
	ns            = "failoverbench"
)

func main() {
	perMember := flag.Int("per-member", 100, "Welcomes per member")
	members := flag.Int("members", 3, "members of the ring")
	rounds := flag.Int("rounds", 3, "members killed, one per round")
	workers := flag.Int("workers", 0, "--max-concurrent-reconciles of each member (0: the example's default for a sharded replica, 8)")
	out := flag.String("out", "", "directory to write the report into (also printed)")
	timeout := flag.Duration("timeout", 10*time.Minute, "bound of each wait")
	args := flag.String("operator-args", "", "more flags for each member, space-separated (e.g. --zap-log-level=debug --zap-time-encoding=rfc3339nano)")
	keep := flag.Bool("keep-logs", false, "keep the members' logs (their directory is printed)")
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	if *members < 2 {
		fmt.Fprintln(os.Stderr, "failoverbench: -members must be at least 2")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b := &run{perMember: *perMember, members: *members, rounds: *rounds, workers: *workers, timeout: *timeout,
		args: strings.Fields(*args), keep: *keep}
	report, err := b.run(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "failoverbench:", err)
		os.Exit(1)
	}
	fmt.Print(report)
	if *out != "" {
		path, err := bench.SaveReport(*out, fmt.Sprintf("failover-p%d", *perMember), report)
		if err != nil {
			fmt.Fprintln(os.Stderr, "failoverbench:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "wrote", path)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

type run struct {
	perMember, members, rounds, workers int
	timeout                             time.Duration
	args                                []string
	keep                                bool

	c          client.Client
	binary     string
	kubeconfig string
	dir        string
	procs      map[string]*proc

	mu  sync.Mutex
	cur *round
}

// round is what one kill's watches saw.
type round struct {
	victim    string
	want      string            // the Welcomes' new spec.name
	owner     map[string]string // each of the victim's Welcomes: the survivor the ring names
	killed    time.Time
	renewed   time.Time // the victim's last renewal
	fenced    time.Time
	fencedBy  string
	claims    []time.Time
	applied   []time.Time
	isClaimed map[string]bool
	isApplied map[string]bool
	done      chan struct{}
	// bySurvivor: each survivor's share, its last claim and its last Deployment applied.
	bySurvivor map[string]*share
}

// share is what one survivor took over in a round.
type share struct {
	objects                int
	lastClaim, lastApplied time.Time
}

// slowest returns the longest time a survivor took from its last claim to its last Deployment
// applied (its take-over work once it held its share), and that survivor's share.
func (r *round) slowest() (time.Duration, int) {
	var worst time.Duration
	n := 0
	for _, sh := range r.bySurvivor {
		if d := sh.lastApplied.Sub(sh.lastClaim); d > worst {
			worst, n = d, sh.objects
		}
	}
	return worst, n
}

func (b *run) run(ctx context.Context) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	n := b.perMember * b.members
	logf("starting the local cluster (%d kwok nodes)", bench.NodesFor(n))
	env, err := harness.Start(ctx,
		harness.WithFullCluster(cluster.WithNodes(bench.NodesFor(n))),
		harness.WithCRDPaths(filepath.Join(root, "examples/welcome/config/crd/bases")),
		harness.WithSchemeAdders(v1alpha1.AddToScheme))
	if err != nil {
		return "", fmt.Errorf("start the local cluster: %w", err)
	}
	defer func() { _ = env.Stop() }()
	b.c, b.kubeconfig = env.Client, env.KubeconfigPath
	if b.dir, err = os.MkdirTemp("", "failoverbench"); err != nil {
		return "", err
	}
	defer func() {
		if b.keep {
			logf("the members' logs are in %s", b.dir)
			return
		}
		_ = os.RemoveAll(b.dir)
	}()
	b.binary = filepath.Join(b.dir, "welcome")
	logf("building the Welcome operator")
	build := exec.CommandContext(ctx, "go", "build", "-o", b.binary, "./examples/welcome")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./examples/welcome: %w\n%s", err, out)
	}
	if err := b.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return "", fmt.Errorf("create namespace: %w", err)
	}
	if err := b.watch(ctx, env); err != nil {
		return "", err
	}
	logf("creating %d Welcomes", n)
	if err := createWelcomes(ctx, b.c, n); err != nil {
		return "", err
	}
	var names []string
	b.procs = map[string]*proc{}
	for i := range b.members {
		name := fmt.Sprintf("m%d", i)
		names = append(names, name)
		if err := b.start(ctx, name); err != nil {
			return "", err
		}
	}
	defer func() {
		for _, p := range b.procs {
			p.stop()
		}
	}()
	var rounds []*round
	for i := range b.rounds {
		if err := b.settle(ctx, names); err != nil {
			return "", err
		}
		time.Sleep(3 * retryPeriod) // the Leases renew a few times: the last renewal is a normal one
		r, err := b.kill(ctx, names[i%len(names)], fmt.Sprintf("r%d", i+1), names)
		if err != nil {
			return "", err
		}
		rounds = append(rounds, r)
		logf("round %d: %d Welcomes of %s taken over %v after its last renewal, %v after the fence",
			i+1, len(r.owner), r.victim, r.last(r.applied).Sub(r.renewed).Round(100*time.Millisecond), r.last(r.applied).Sub(r.fenced).Round(100*time.Millisecond))
		if err := b.start(ctx, r.victim); err != nil {
			return "", err
		}
	}
	return b.report(rounds), nil
}

// watch records, for the round under way, the fence of the victim's Lease, the claims of its
// Welcomes and the Deployments applied with the change.
func (b *run) watch(ctx context.Context, env *harness.Env) error {
	ca, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	handlers := map[client.Object]func(obj any){
		&coordinationv1.Lease{}: func(obj any) {
			l, ok := obj.(*coordinationv1.Lease)
			if !ok {
				return
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			r := b.cur
			if r == nil || l.Name != ringName+"-"+r.victim || !r.fenced.IsZero() {
				return
			}
			if by := sharding.FencedBy(ptr.Deref(l.Spec.HolderIdentity, "")); by != "" {
				r.fenced, r.fencedBy = time.Now(), by
			}
		},
		&v1alpha1.Welcome{}: func(obj any) {
			w, ok := obj.(*v1alpha1.Welcome)
			if !ok {
				return
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			r := b.cur
			if r == nil || r.isClaimed[w.Name] || r.owner[w.Name] == "" || w.Labels[sharding.Label(ringName)] != r.owner[w.Name] {
				return
			}
			now := time.Now()
			r.isClaimed[w.Name] = true
			r.claims = append(r.claims, now)
			r.bySurvivor[r.owner[w.Name]].lastClaim = now
		},
		&appsv1.Deployment{}: func(obj any) {
			d, ok := obj.(*appsv1.Deployment)
			if !ok {
				return
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			r := b.cur
			if r == nil || r.isApplied[d.Name] || r.owner[d.Name] == "" || d.Labels[sharding.Label(ringName)] != r.owner[d.Name] || envName(d) != r.want {
				return
			}
			now := time.Now()
			r.isApplied[d.Name] = true
			r.applied = append(r.applied, now)
			r.bySurvivor[r.owner[d.Name]].lastApplied = now
			if len(r.applied) == len(r.owner) {
				close(r.done)
			}
		},
	}
	for obj, h := range handlers {
		inf, err := ca.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("watch: %w", err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: h, UpdateFunc: func(_, o any) { h(o) },
		}); err != nil {
			return fmt.Errorf("watch: %w", err)
		}
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		return errors.New("watch: caches did not sync")
	}
	return nil
}

// kill kills victim, changes every Welcome it held to spec.name want, and waits until the survivors
// applied the change to each.
func (b *run) kill(ctx context.Context, victim, want string, names []string) (*round, error) {
	var ws v1alpha1.WelcomeList
	if err := b.c.List(ctx, &ws, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	survivors := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == victim })
	ring := sharding.NewRing(survivors)
	r := &round{victim: victim, want: want, owner: map[string]string{}, isClaimed: map[string]bool{}, isApplied: map[string]bool{},
		done: make(chan struct{}), bySurvivor: map[string]*share{}}
	for _, s := range survivors {
		r.bySurvivor[s] = &share{}
	}
	var held []v1alpha1.Welcome
	for _, w := range ws.Items {
		if w.Labels[sharding.Label(ringName)] == victim {
			held = append(held, w)
			r.owner[w.Name] = ring.Owner(w.UID)
			r.bySurvivor[r.owner[w.Name]].objects++
		}
	}
	if len(held) == 0 {
		return nil, fmt.Errorf("%s holds no Welcome", victim)
	}
	b.mu.Lock()
	b.cur = r
	b.mu.Unlock()
	logf("killing %s (%d Welcomes)", victim, len(held))
	r.killed = time.Now()
	b.procs[victim].kill()
	lease := &coordinationv1.Lease{}
	if err := b.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ringName + "-" + victim}, lease); err != nil {
		return nil, err
	}
	r.renewed = lease.Spec.RenewTime.Time
	if err := rename(ctx, b.c, held, want); err != nil {
		return nil, err
	}
	select {
	case <-r.done:
	case <-time.After(b.timeout):
		b.mu.Lock()
		defer b.mu.Unlock()
		return nil, fmt.Errorf("%d of %s's %d Welcomes applied after %v (logs in %s)", len(r.applied), victim, len(r.owner), b.timeout, b.dir)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cur = nil
	return r, nil
}

func (r *round) last(ts []time.Time) time.Time { return slices.MaxFunc(ts, time.Time.Compare) }

// settle waits until every Welcome is labelled with the member the ring of names assigns it to, and
// its Deployment likewise, with the Welcome's spec.name.
func (b *run) settle(ctx context.Context, names []string) error {
	ring := sharding.NewRing(names)
	deadline := time.Now().Add(b.timeout)
	key := sharding.Label(ringName)
	for {
		var ws v1alpha1.WelcomeList
		var ds appsv1.DeploymentList
		if err := errors.Join(b.c.List(ctx, &ws, client.InNamespace(ns)), b.c.List(ctx, &ds, client.InNamespace(ns))); err != nil {
			return err
		}
		byName := map[string]appsv1.Deployment{}
		for _, d := range ds.Items {
			byName[d.Name] = d
		}
		waiting := 0
		for _, w := range ws.Items {
			d, ok := byName[w.Name]
			if m := ring.Owner(w.UID); w.Labels[key] != m || !ok || d.Labels[key] != m || envName(&d) != w.Spec.Name ||
				w.Annotations[sharding.MovedFromAnnotation] != "" {
				waiting++
			}
		}
		if waiting == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d Welcomes not settled on %v after %v (logs in %s)", waiting, len(ws.Items), names, b.timeout, b.dir)
		}
		logf("%d of %d Welcomes not settled on %v yet", waiting, len(ws.Items), names)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

func (b *run) report(rounds []*round) string {
	var s strings.Builder
	workers := "8 (the example's default)"
	if b.workers > 0 {
		workers = fmt.Sprint(b.workers)
	}
	fmt.Fprintf(&s, "# Failover of the sharded Welcome operator\n\n")
	fmt.Fprintf(&s, "`go run ./bench/cmd/failoverbench -per-member %d -members %d -rounds %d` on %s: %d members at the default Lease timings (15 s / 10 s / 2 s), %s reconciles at once each, %d Welcomes (a ConfigMap, a Deployment and a Service each) on a full local cluster. Each round kills one member with SIGKILL and changes every Welcome it held; times (s) run to the last Deployment applied with the change by the survivor the ring names.\n\n",
		b.perMember, b.members, b.rounds, time.Now().Format("2006-01-02"), b.members, workers, b.perMember*b.members)
	fmt.Fprintf(&s, "| round | Welcomes taken over | renewal to kill | renewal to fence | renewal to last claim | fence to last applied | slowest survivor: last claim to last applied (its Welcomes) | renewal to last applied | kill to last applied |\n")
	fmt.Fprintf(&s, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	sec := func(d time.Duration) string { return fmt.Sprintf("%.1f", d.Seconds()) }
	for i, r := range rounds {
		work, share := r.slowest()
		fmt.Fprintf(&s, "| %d | %d | %s | %s | %s | %s | %s (%d) | %s | %s |\n", i+1, len(r.owner),
			sec(r.killed.Sub(r.renewed)), sec(r.fenced.Sub(r.renewed)), sec(r.last(r.claims).Sub(r.renewed)),
			sec(r.last(r.applied).Sub(r.fenced)), sec(work), share, sec(r.last(r.applied).Sub(r.renewed)), sec(r.last(r.applied).Sub(r.killed)))
	}
	fmt.Fprintf(&s, "\nEvery survivor starts claiming its share within L + 2R = %v of the last renewal (the Lease seen up to R late, its expiry up to R late); the claims and the take-over work are the rest.\n", leaseDuration+2*retryPeriod)
	return s.String()
}

func createWelcomes(ctx context.Context, c client.Client, n int) error {
	var g errgroup.Group
	g.SetLimit(8)
	for i := range n {
		g.Go(func() error {
			w := &v1alpha1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%05d", i), Namespace: ns}, Spec: v1alpha1.WelcomeSpec{Name: "r0"}}
			if err := c.Create(ctx, w); err != nil {
				return fmt.Errorf("create welcome %s: %w", w.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// rename sets spec.name of the Welcomes to name (which changes their page and Deployment), 8 at a time.
func rename(ctx context.Context, c client.Client, ws []v1alpha1.Welcome, name string) error {
	var g errgroup.Group
	g.SetLimit(8)
	for _, w := range ws {
		g.Go(func() error {
			patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"name":"`+name+`","email":"`+name+`@example.com"}}`))
			if err := c.Patch(ctx, &w, patch); err != nil {
				return fmt.Errorf("change welcome %s: %w", w.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// envName returns the NAME environment variable of the Deployment's first container.
func envName(d *appsv1.Deployment) string {
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "NAME" {
				return e.Value
			}
		}
	}
	return ""
}

type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

// start runs member name of the ring; its log goes to the bench's directory.
func (b *run) start(ctx context.Context, name string) error {
	logFile, err := os.OpenFile(filepath.Join(b.dir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	args := []string{"--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--shard-ring=" + ringName, "--shard-member=" + name, "--shard-namespace=" + ns}
	if b.workers > 0 {
		args = append(args, fmt.Sprintf("--max-concurrent-reconciles=%d", b.workers))
	}
	cmd := exec.CommandContext(ctx, b.binary, append(args, b.args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+b.kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start member %s: %w", name, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = logFile.Close(); close(p.done) }()
	b.procs[name] = p
	return nil
}

// kill ends the process with SIGKILL and waits for it.
func (p *proc) kill() {
	p.once.Do(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
}

// stop ends the process gracefully (its Lease released) and waits for it.
func (p *proc) stop() {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
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
			return "", errors.New("run failoverbench inside the convergo module")
		}
		dir = parent
	}
}
