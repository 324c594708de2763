package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/testing/cluster"
	"github.com/convergo-dev/convergo/testing/harness"
)

// Implementation is one Welcome operator under measurement.
type Implementation struct {
	// Name labels the implementation's column ("convergo", "baseline").
	Name string
	// Setup registers the implementation's controllers with a fresh manager.
	Setup func(mgr manager.Manager) error
	// Description says how it is configured (shown in the report), e.g. its number of workers.
	Description string
	// Cache, when set, adjusts the manager's cache options (after the bench limits them to the
	// namespace), as the implementation's main does.
	Cache func(*cache.Options)
	// Config, when set, adjusts a copy of the manager's client configuration, as the implementation's
	// main would.
	Config func(*rest.Config)
	// Install, when set, installs what the implementation ships besides its manager (an admission
	// policy), for its namespace ns only, before its manager starts; the function it returns removes it
	// once the implementation has been measured.
	Install func(ctx context.Context, c client.Client, ns string) (remove func(context.Context) error, err error)
}

// Defaults of the options.
const (
	DefaultN            = 50
	MaxN                = 2000
	DefaultPhaseTimeout = 10 * time.Minute
	DefaultQuietPeriod  = 3 * time.Second
	// DefaultIdleWindow is how long the bench reads the control plane's idle CPU before each converge
	// phase.
	DefaultIdleWindow = 10 * time.Second
	// DefaultRounds is even, so that each implementation is measured first as often as the other.
	DefaultRounds = 4
	// DefaultWorkers is how many concurrent requests the driver makes to create, update or delete.
	DefaultWorkers = 16
	// DefaultRestarts is how many times each round restarts the manager: a restart takes under a
	// second, and a round of one would leave the restart's figures to the noise of a single sample.
	DefaultRestarts = 3
)

// pollInterval is how often the driver checks a phase's goal and the manager's activity.
const pollInterval = 100 * time.Millisecond

// restartPollInterval is how often the driver checks the restart's goal (a counter of this process):
// a restart takes a few hundred milliseconds, which checks every pollInterval would round up by as
// much as a third. A check reads controller-runtime's reconcile counter alone (reconcileCount, a few
// microseconds), so checks every millisecond take under 1% of a core from the manager under
// measurement and round a restart up by at most a millisecond. (Checks that gathered the whole
// registry, about 1 ms of CPU each, ran every 20 ms: every 5 ms took 70 ms of a 300-ms restart.)
const restartPollInterval = time.Millisecond

// Option configures Run.
type Option func(*config)

type config struct {
	n             int
	nodes         int
	rounds        int
	restarts      int
	phaseTimeout  time.Duration
	quiet         time.Duration
	workers       int
	crdPaths      []string
	log           logr.Logger
	managerLog    logr.Logger
	clusterOpts   []cluster.Option
	harnessOpts   []harness.Option
	startedAt     func() time.Time
	replicasAfter int32
	heapProfiles  string
	cpuProfiles   string
	// serverProfiles is WithServerProfiles's directory.
	serverProfiles string
	noRollout      bool
	idleWindow     time.Duration
	floor          bool
}

// rolloutControllers are the controllers of kube-controller-manager that act on a Welcome's children:
// WithoutRollout turns them off.
var rolloutControllers = []string{
	"deployment-controller", "replicaset-controller",
	"endpointslice-controller", "endpoints-controller", "endpointslice-mirroring-controller",
}

// disabled returns kube-controller-manager's argument that turns off the controllers named, added
// after its --controllers=* (a list flag given twice adds to the first).
func disabled(controllers []string) string {
	off := make([]string, len(controllers))
	for i, c := range controllers {
		off[i] = "-" + c
	}
	return "--controllers=" + strings.Join(off, ",")
}

// WithoutRollout measures what the managers' own requests cost the API server, without the work the
// cluster does in answer to them: kube-controller-manager runs without the controllers that act on
// the children (rolloutControllers; the garbage collector still runs), so no Deployment rolls out, no
// pod is made and no EndpointSlice is written. A Welcome can then never be Ready: the converge and
// update phases end when every Welcome has its three children and a Ready condition (of any status)
// for its generation, and the warm-up waits for no Deployment to become available.
func WithoutRollout() Option { return func(c *config) { c.noRollout = true } }

// WithHeapProfiles writes a heap profile of the process (pprof format) into dir once each
// implementation has converged, when the memory is measured: dir/<implementation>-r<round>.heap, and
// one just before its converge phase, when the memory measured is the base:
// dir/<implementation>-r<round>-before.heap. What the live heap per CR is made of is the difference:
// go tool pprof -sample_index=inuse_space -diff_base <before> <after>.
// Profiles sample more finely (runtime.MemProfileRate) from the first Run with it on.
func WithHeapProfiles(dir string) Option { return func(c *config) { c.heapProfiles = dir } }

// WithCPUProfiles writes a CPU profile of the process (pprof format) for every measured phase into
// dir: dir/<implementation>-r<round>-<phase>.cpu, from the phase's start until the manager went
// quiet. The process holds the manager under measurement and the driver, whose work is the same for
// every implementation. Only one CPU profile can run at a time in a process: do not combine it with
// another profiler.
func WithCPUProfiles(dir string) Option { return func(c *config) { c.cpuProfiles = dir } }

// WithN sets the number of Welcome objects per implementation (default DefaultN, at most MaxN).
func WithN(n int) Option { return func(c *config) { c.n = n } }

// WithNodes sets the number of fake nodes; 0 (the default) sizes the cluster for N: at least 3, and
// room (110 pods a node) for two pods per Welcome.
func WithNodes(n int) Option { return func(c *config) { c.nodes = n } }

// WithRounds sets how many times each implementation is measured (default DefaultRounds); the
// order of the implementations alternates between rounds and the report holds the median of each
// figure.
func WithRounds(n int) Option { return func(c *config) { c.rounds = n } }

// WithRestarts sets how many times each round measures the restart phase (and, with WithFloor, the
// receiver's restart after each), one after the other (default DefaultRestarts): the round's restart
// figures are the medians of these (Result.RestartSeconds lists each restart's time).
func WithRestarts(n int) Option { return func(c *config) { c.restarts = n } }

// WithPhaseTimeout bounds each phase (default DefaultPhaseTimeout).
func WithPhaseTimeout(d time.Duration) Option { return func(c *config) { c.phaseTimeout = d } }

// WithQuietPeriod sets how long a manager must make no request and finish no reconcile before a
// phase's requests are counted as complete (default DefaultQuietPeriod).
func WithQuietPeriod(d time.Duration) Option { return func(c *config) { c.quiet = d } }

// WithFloor has the bench measure what operators cannot shorten:
//   - once warmed up and before the first measurement, it rolls out N Deployments by hand as the
//     warm-up does (each owned by a Welcome, with a ConfigMap, created 16 at a time, no operator
//     running) and reports when all were available, then scales them to the update phase's
//     replicas and reports when all were scaled (Report.Floor): the cluster's own part of a converge
//     and of an update phase, its time and the CPU spent until then (not WithoutRollout);
//   - after each restart phase, it restarts a receiver on the implementation's objects, a manager that
//     only lists and watches them and reads each Welcome once (Result.RestartFloor): the shortest
//     restart of an operator that lists these objects whole. The implementation's manager is then
//     restarted again, and the update phase starts once it is quiet.
func WithFloor() Option { return func(c *config) { c.floor = true } }

// WithIdleWindow sets how long the control plane's idle CPU is read before each converge phase
// (default DefaultIdleWindow; 0 reads none, and the report has no figures above idle).
func WithIdleWindow(d time.Duration) Option { return func(c *config) { c.idleWindow = d } }

// WithWorkers sets how many concurrent requests the driver makes (default DefaultWorkers).
func WithWorkers(n int) Option { return func(c *config) { c.workers = n } }

// WithCRDPaths sets where the Welcome CRD is read from (default examples/welcome/config/crd/bases,
// relative to the working directory).
func WithCRDPaths(paths ...string) Option { return func(c *config) { c.crdPaths = paths } }

// WithLogger sets the logger for the bench's progress (default: discard).
func WithLogger(l logr.Logger) Option { return func(c *config) { c.log = l } }

// WithManagerLogger sets the logger of the managers under measurement (default: discard).
func WithManagerLogger(l logr.Logger) Option { return func(c *config) { c.managerLog = l } }

// WithClusterOptions passes options to the local cluster (testing/cluster), e.g. extra arguments.
func WithClusterOptions(opts ...cluster.Option) Option {
	return func(c *config) { c.clusterOpts = append(c.clusterOpts, opts...) }
}

// WithHarnessOptions passes options to harness.Start, e.g. harness.WithAssetOptions.
func WithHarnessOptions(opts ...harness.Option) Option {
	return func(c *config) { c.harnessOpts = append(c.harnessOpts, opts...) }
}

// NodesFor returns the number of fake nodes the bench uses for n Welcomes: at least 3, and room for
// two pods per Welcome (the update phase scales to 2 replicas) at 110 pods a node, plus one spare.
func NodesFor(n int) int {
	return max(3, (2*n+109)/110+1)
}

func newConfig(opts []Option) (config, error) {
	cfg := config{
		n:             DefaultN,
		rounds:        DefaultRounds,
		restarts:      DefaultRestarts,
		phaseTimeout:  DefaultPhaseTimeout,
		quiet:         DefaultQuietPeriod,
		idleWindow:    DefaultIdleWindow,
		workers:       DefaultWorkers,
		crdPaths:      []string{"examples/welcome/config/crd/bases"},
		log:           logr.Discard(),
		managerLog:    logr.Discard(),
		startedAt:     time.Now,
		replicasAfter: 2,
	}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case cfg.n < 1 || cfg.n > MaxN:
		return cfg, fmt.Errorf("n must be between 1 and %d, not %d", MaxN, cfg.n)
	case cfg.rounds < 1:
		return cfg, fmt.Errorf("rounds must be at least 1, not %d", cfg.rounds)
	case cfg.restarts < 1:
		return cfg, fmt.Errorf("restarts must be at least 1, not %d", cfg.restarts)
	case cfg.nodes < 0:
		return cfg, fmt.Errorf("nodes must not be negative, not %d", cfg.nodes)
	case cfg.workers < 1:
		return cfg, fmt.Errorf("workers must be at least 1, not %d", cfg.workers)
	case cfg.idleWindow < 0:
		return cfg, fmt.Errorf("idle window must not be negative, not %s", cfg.idleWindow)
	}
	if cfg.nodes == 0 {
		cfg.nodes = NodesFor(cfg.n)
	}
	return cfg, nil
}

// Run starts one full local cluster (testing/cluster through the harness: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok nodes), installs the Welcome CRD, waits until the
// garbage collector knows the Welcome kind (see warmUp), and measures each implementation in turn, in
// its own namespace, with its own manager whose requests a harness.RequestCounter records. Each
// measurement first primes the manager with one Welcome created, converged and deleted, then runs:
//
//   - converge: N Welcomes created at once, until all are Ready (Ready=True for their generation);
//   - memory: the manager's heap with the N converged objects, less the heap before they existed;
//   - restart: the manager replaced by a fresh one (fresh cache), until every Welcome was reconciled,
//     several times one after the other (WithRestarts), the figures their medians;
//   - update: spec.replicas set to 2 on every Welcome, until all are Ready again;
//   - delete: every Welcome deleted, until no Welcome and no ConfigMap, Deployment or Service of one
//     is left; its CPU figures are read once the garbage collector has also deleted their ReplicaSets
//     and Pods.
//
// Requests are counted until the manager has been quiet (no request, no reconcile) for the quiet
// period. The driver's own requests go through an uncounted client. The measurements are repeated
// for the configured number of rounds, the order of the implementations alternating, and the
// report's Results hold the median of every figure (Runs holds each measurement).
func Run(ctx context.Context, impls []Implementation, opts ...Option) (*Report, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if len(impls) == 0 {
		return nil, errors.New("bench: no implementation to measure")
	}
	if cfg.heapProfiles != "" {
		runtime.MemProfileRate = 512 // the default samples one allocation in 512 KiB: too coarse per object
	}
	report := &Report{N: cfg.n, Nodes: cfg.nodes, Rounds: cfg.rounds, Restarts: cfg.restarts, Started: cfg.startedAt(), GoVersion: runtime.Version(),
		WithoutRollout: cfg.noRollout}
	if cfg.noRollout {
		cfg.clusterOpts = append(cfg.clusterOpts, cluster.WithExtraArgs(cluster.ControllerManager, disabled(rolloutControllers)))
	}

	cfg.log.Info("starting the local cluster", "nodes", cfg.nodes)
	hopts := append([]harness.Option{
		harness.WithFullCluster(append([]cluster.Option{cluster.WithNodes(cfg.nodes)}, cfg.clusterOpts...)...),
		harness.WithCRDPaths(cfg.crdPaths...),
		harness.WithSchemeAdders(v1alpha1.AddToScheme),
	}, cfg.harnessOpts...)
	env, err := harness.Start(ctx, hopts...)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			cfg.log.Error(err, "stop the local cluster")
		}
	}()

	begin := time.Now()
	cfg.log.Info("warming up: a batch of Deployments made by hand, and the garbage collector knowing Welcomes", "batch", min(cfg.n, maxWarmUpBatch))
	if report.WarmUp, err = warmUp(ctx, env, cfg.n, cfg.phaseTimeout, !cfg.noRollout); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	cfg.log.Info("warmed up", "after", since(begin), "deployments", report.WarmUp.Deployments, "availableAfter", report.WarmUp.AvailableSeconds)
	if cfg.floor && !cfg.noRollout {
		floor, err := byHand(ctx, env, "bench-floor", cfg.n, cfg.phaseTimeout, true, cfg.replicasAfter)
		if err != nil {
			return nil, fmt.Errorf("bench: floor: %w", err)
		}
		report.Floor = &floor
		cfg.log.Info("floor", "deployments", floor.Deployments, "availableAfter", floor.AvailableSeconds, "scaledAfter", floor.ScaledSeconds)
	}

	runs := map[string][]Result{}
	for round := 1; round <= cfg.rounds; round++ {
		order := slices.Clone(impls)
		if round%2 == 0 {
			slices.Reverse(order) // alternate, so that no implementation always runs on a fresher cluster
		}
		for _, impl := range order {
			res, err := runImplementation(ctx, env, impl, round, &cfg)
			if err != nil {
				if tails := env.LogTails(20); tails != "" {
					cfg.log.Info("control-plane logs", "tails", tails)
				}
				return nil, fmt.Errorf("bench %s, round %d: %w", impl.Name, round, err)
			}
			report.Runs = append(report.Runs, *res)
			runs[impl.Name] = append(runs[impl.Name], *res)
		}
	}
	for _, impl := range impls {
		report.Results = append(report.Results, Median(runs[impl.Name]))
	}
	return report, nil
}

// run is the state of one implementation's measurement.
type run struct {
	cfg     *config
	env     *harness.Env
	impl    Implementation
	round   int
	ns      string
	counter *harness.RequestCounter
	latency *latencies
	mgr     *runningManager
	log     logr.Logger
	names   []string
	// idle is the CPU seconds per second each component used while nothing happened (idleCPU).
	idle map[string]float64
	// apiserver reads kube-apiserver's metrics (clusterWrites).
	apiserver rest.Interface
}

func runImplementation(ctx context.Context, env *harness.Env, impl Implementation, round int, cfg *config) (*Result, error) {
	r := &run{
		cfg: cfg, env: env, impl: impl, round: round,
		ns:      fmt.Sprintf("bench-%s-%d", impl.Name, round),
		counter: harness.NewRequestCounter(),
		latency: newLatencies(),
		log:     cfg.log.WithValues("implementation", impl.Name, "round", round),
	}
	for i := range cfg.n {
		r.names = append(r.names, fmt.Sprintf("welcome-%04d", i))
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return nil, fmt.Errorf("client for the API server's metrics: %w", err)
	}
	r.apiserver = cs.CoreV1().RESTClient()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns}}
	if err := env.Client.Create(ctx, ns); err != nil {
		return nil, fmt.Errorf("create namespace %s: %w", r.ns, err)
	}
	defer r.deleteNamespace()

	if impl.Install != nil {
		remove, err := impl.Install(ctx, env.Client, r.ns)
		if remove != nil {
			defer func() {
				if err := remove(context.WithoutCancel(ctx)); err != nil {
					r.log.Error(err, "remove what the implementation installed")
				}
			}()
		}
		if err != nil {
			return nil, fmt.Errorf("install %s: %w", impl.Name, err)
		}
	}
	if r.mgr, err = r.startManager(ctx, r.impl, true); err != nil {
		return nil, err
	}
	defer func() {
		if r.mgr != nil {
			r.mgr.stop()
		}
	}()

	// One Welcome created, converged and deleted before measuring: what the implementation initialises
	// lazily (clients, caches, event broadcasters, reflection caches) then weighs on the heap of both
	// memory measurements, and its first requests do not slow down the converge phase.
	if err := r.prime(ctx); err != nil {
		return nil, fmt.Errorf("prime: %w", err)
	}
	res := &Result{Implementation: impl.Name, Description: impl.Description, Round: round}
	if r.idle, err = r.idleCPU(ctx); err != nil {
		return nil, fmt.Errorf("idle: %w", err)
	}
	res.IdleCPUPerSecond = r.idle
	r.counter.Reset()
	heapBefore := heap()
	if cfg.heapProfiles != "" { // the base the converged profile is compared with (go tool pprof -diff_base)
		if err := writeHeapProfile(filepath.Join(cfg.heapProfiles, fmt.Sprintf("%s-r%d-before.heap", impl.Name, round))); err != nil {
			return nil, err
		}
	}

	if res.Converge, err = r.converge(ctx); err != nil {
		return nil, fmt.Errorf("converge: %w", err)
	}
	r.counter.Reset() // the recorded requests would count as the manager's heap
	heapAfter := heap()
	if cfg.heapProfiles != "" {
		if err := writeHeapProfile(filepath.Join(cfg.heapProfiles, fmt.Sprintf("%s-r%d.heap", impl.Name, round))); err != nil {
			return nil, err
		}
	}
	res.Memory = Memory{
		HeapInuseBytes: int64(heapAfter.HeapInuse) - int64(heapBefore.HeapInuse),
		HeapAllocBytes: int64(heapAfter.HeapAlloc) - int64(heapBefore.HeapAlloc),
	}
	r.log.Info("memory", "heapInusePerCR", res.Memory.HeapInuseBytes/int64(cfg.n), "heapAllocPerCR", res.Memory.HeapAllocBytes/int64(cfg.n))
	if res.Memory.ForeignBytes, res.Memory.ForeignObjects, err = r.foreign(ctx, heapAfter); err != nil {
		return nil, fmt.Errorf("foreign objects: %w", err)
	}
	r.log.Info("memory", "foreignBytesPerObject", int64(res.Memory.ForeignBytes))
	if err := r.foreignGone(ctx); err != nil {
		return nil, err
	}

	if err := r.restarts(ctx, res); err != nil {
		return nil, err
	}
	if res.Update, err = r.update(ctx); err != nil {
		return nil, fmt.Errorf("update: %w", err)
	}
	if res.Delete, err = r.delete(ctx); err != nil {
		return nil, fmt.Errorf("delete: %w", err)
	}
	return res, nil
}

// prime creates one Welcome, waits until it is Ready, deletes it and waits until it and its children
// are gone, through the driver's uncounted client.
func (r *run) prime(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.phaseTimeout)
	defer cancel()
	c := r.env.Client
	w := &v1alpha1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Name: "prime", Namespace: r.ns},
		Spec:       v1alpha1.WelcomeSpec{Name: "Prime"},
	}
	if err := c.Create(ctx, w); err != nil {
		return fmt.Errorf("create welcome: %w", err)
	}
	key := client.ObjectKeyFromObject(w)
	if err := poll(ctx, func() (bool, error) {
		if err := c.Get(ctx, key, w); err != nil {
			return false, err
		}
		return r.reached(w, 0), nil
	}); err != nil {
		return fmt.Errorf("wait until %s (last seen: %s): %w", r.goalName(), conditionsOf(w), err)
	}
	if err := c.Delete(ctx, w); err != nil {
		return fmt.Errorf("delete welcome: %w", err)
	}
	for _, obj := range []client.Object{w, &corev1.ConfigMap{}, &appsv1.Deployment{}, &corev1.Service{}} {
		if err := poll(ctx, func() (bool, error) {
			err := c.Get(ctx, key, obj)
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		}); err != nil {
			return fmt.Errorf("wait until %T %s is gone: %w", obj, key, err)
		}
	}
	return nil
}

// converge creates the N Welcomes at once and waits until all are Ready.
func (r *run) converge(ctx context.Context) (Phase, error) {
	v, err := newView(ctx, r.env.Config, r.env.Scheme, r.ns)
	if err != nil {
		return Phase{}, err
	}
	defer v.stop()
	p, err := r.measure(ctx, "converge", func() error {
		return r.forEach(ctx, func(name string) error {
			w := &v1alpha1.Welcome{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.ns},
				Spec:       v1alpha1.WelcomeSpec{Name: "User " + strings.TrimPrefix(name, "welcome-")},
			}
			if err := r.env.Client.Create(ctx, w); err != nil {
				return fmt.Errorf("create welcome %s: %w", name, err)
			}
			return nil
		})
	}, r.allReady(v, nil))
	return p, err
}

// restarts measures the restart phase cfg.restarts times into res, each with, under WithFloor, the
// receiver's restart right after it, so that both meet the machine in the same state. res's restart
// figures are the medians. Under WithFloor the implementation's manager is then restarted once more,
// unmeasured, and the update phase finds it as a restart left it.
func (r *run) restarts(ctx context.Context, res *Result) error {
	var restarts, floors []Phase
	for i := 1; i <= r.cfg.restarts; i++ {
		p, err := r.restartAs(ctx, r.restartName("restart", i), r.impl)
		if err != nil {
			return fmt.Errorf("restart: %w", err)
		}
		restarts = append(restarts, p)
		if !r.cfg.floor {
			continue
		}
		if p, err = r.restartAs(ctx, r.restartName("restart-floor", i), receiverFor(r.impl)); err != nil {
			return fmt.Errorf("restart floor: %w", err)
		}
		floors = append(floors, p)
	}
	res.Restart, res.RestartSeconds = medianPhase(restarts), secondsOf(restarts)
	if len(floors) > 0 {
		floor := medianPhase(floors)
		res.RestartFloor, res.RestartFloorSeconds = &floor, secondsOf(floors)
		if _, err := r.restartAs(ctx, "restart-back", r.impl); err != nil {
			return fmt.Errorf("restart %s after the receiver: %w", r.impl.Name, err)
		}
	}
	return nil
}

// secondsOf returns the time of each phase, in order.
func secondsOf(ps []Phase) []float64 {
	out := make([]float64, len(ps))
	for i, p := range ps {
		out[i] = p.Seconds
	}
	return out
}

// restartName names the i-th restart of a round in logs and profiles: name alone when the round has
// one, name-i when it has several.
func (r *run) restartName(name string, i int) string {
	if r.cfg.restarts == 1 {
		return name
	}
	return fmt.Sprintf("%s-%d", name, i)
}

// restartAs replaces the manager by a fresh one, impl's, and waits until every Welcome was reconciled
// again; name names the phase in logs and profiles. With impl the receiver (see receiverFor) it
// measures the least a restart of an operator that lists the implementation's objects whole can
// take.
func (r *run) restartAs(ctx context.Context, name string, impl Implementation) (Phase, error) {
	r.mgr.stop()
	r.mgr = nil
	var base int
	p, err := r.measureEvery(ctx, name, restartPollInterval, func() error {
		var err error
		if base, err = reconcileCount(); err != nil {
			return err
		}
		r.mgr, err = r.startManager(ctx, impl, false)
		return err
	}, func(ctx context.Context) (bool, string, error) {
		n, err := reconcileCount()
		if err != nil {
			return false, "", err
		}
		return n-base >= r.cfg.n, fmt.Sprintf("%d/%d reconciled", n-base, r.cfg.n), nil
	}, nil)
	return p, err
}

// update sets spec.replicas on every Welcome and waits until all are Ready for the new generation.
func (r *run) update(ctx context.Context) (Phase, error) {
	v, err := newView(ctx, r.env.Config, r.env.Scheme, r.ns)
	if err != nil {
		return Phase{}, err
	}
	defer v.stop()
	var mu sync.Mutex
	generations := map[string]int64{}
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, r.cfg.replicasAfter)
	p, err := r.measure(ctx, "update", func() error {
		return r.forEach(ctx, func(name string) error {
			w := &v1alpha1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.ns}}
			if err := r.env.Client.Patch(ctx, w, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return fmt.Errorf("patch welcome %s: %w", name, err)
			}
			mu.Lock()
			generations[name] = w.Generation
			mu.Unlock()
			return nil
		})
	}, r.allReady(v, func(name string) int64 {
		mu.Lock()
		defer mu.Unlock()
		return generations[name]
	}))
	return p, err
}

// delete deletes every Welcome and waits until neither Welcomes nor their children are left.
func (r *run) delete(ctx context.Context) (Phase, error) {
	v, err := newView(ctx, r.env.Config, r.env.Scheme, r.ns)
	if err != nil {
		return Phase{}, err
	}
	defer v.stop()
	return r.measureEvery(ctx, "delete", pollInterval, func() error {
		return r.forEach(ctx, func(name string) error {
			w := &v1alpha1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.ns}}
			if err := r.env.Client.Delete(ctx, w); err != nil {
				return fmt.Errorf("delete welcome %s: %w", name, err)
			}
			return nil
		})
	}, func(ctx context.Context) (bool, string, error) {
		ws, err := v.welcomes(ctx)
		if err != nil {
			return false, "", err
		}
		children, err := v.children(ctx)
		if err != nil {
			return false, "", err
		}
		return len(ws) == 0 && children == 0, fmt.Sprintf("%d welcomes and %d children left", len(ws), children), nil
	}, func(ctx context.Context) (bool, string, error) {
		n, err := v.cascade(ctx)
		if err != nil {
			return false, "", err
		}
		return n == 0, fmt.Sprintf("%d ReplicaSets and Pods left", n), nil
	})
}

// goal reports whether a phase reached its goal, and a description of the state for progress and
// timeout messages.
type goal func(ctx context.Context) (done bool, state string, err error)

// allReady returns the goal "every Welcome Ready" (without rollout: "every Welcome with a Ready
// condition and its three children"; see WithoutRollout), with minGeneration giving the generation
// each must have reached (nil: any).
func (r *run) allReady(v *view, minGeneration func(name string) int64) goal {
	return func(ctx context.Context) (bool, string, error) {
		ws, err := v.welcomes(ctx)
		if err != nil {
			return false, "", err
		}
		ready := 0
		var notReady *v1alpha1.Welcome
		for i := range ws {
			var minGen int64
			if minGeneration != nil {
				minGen = minGeneration(ws[i].Name)
			}
			if r.reached(&ws[i], minGen) {
				ready++
			} else if notReady == nil {
				notReady = &ws[i]
			}
		}
		state := fmt.Sprintf("%d/%d %s", ready, r.cfg.n, r.goalName())
		if notReady != nil {
			state += fmt.Sprintf("; e.g. %s generation %d: %s", notReady.Name, notReady.Generation, conditionsOf(notReady))
		}
		done := ready == r.cfg.n
		if r.cfg.noRollout {
			children, err := v.children(ctx)
			if err != nil {
				return false, "", err
			}
			state += fmt.Sprintf("; %d/%d children", children, len(childKinds)*r.cfg.n)
			done = done && children == len(childKinds)*r.cfg.n
		}
		return done, state, nil
	}
}

// reached reports whether w has reached the converge and update phases' goal for minGeneration:
// Ready (isReady), or without rollout a Ready condition of any status (isObserved).
func (r *run) reached(w *v1alpha1.Welcome, minGeneration int64) bool {
	if r.cfg.noRollout {
		return isObserved(w, minGeneration)
	}
	return isReady(w, minGeneration)
}

// goalName names what reached checks, for progress and error messages.
func (r *run) goalName() string {
	if r.cfg.noRollout {
		return "with a Ready condition for their generation"
	}
	return "Ready"
}

func conditionsOf(w *v1alpha1.Welcome) string {
	var parts []string
	for _, c := range w.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s (%s, generation %d)", c.Type, c.Status, c.Reason, c.ObservedGeneration))
	}
	if len(parts) == 0 {
		return "no conditions"
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// measure runs one phase: it resets the counter, runs act, waits until reached reports the goal
// (checked every pollInterval), then until the manager is quiet, and summarizes the requests recorded
// meanwhile.
func (r *run) measure(ctx context.Context, name string, act func() error, reached goal) (Phase, error) {
	return r.measureEvery(ctx, name, pollInterval, act, reached, nil)
}

// measureEvery is measure with the goal checked every interval. A phase whose goal comes before the
// cluster has finished the work it set off (the garbage collector deleting what the deleted children
// owned) gives drained, the state where it has: the CPU figures are read only once it is reached, so
// that they hold the whole of that work whenever the goal came.
func (r *run) measureEvery(ctx context.Context, name string, every time.Duration, act func() error, reached, drained goal) (Phase, error) {
	log := r.log.WithValues("phase", name)
	r.counter.Reset()
	r.latency.reset()
	recBefore, err := reconciles()
	if err != nil {
		return Phase{}, err
	}
	writesBefore := r.clusterWrites(ctx)
	syncsBefore := r.controllerWork(ctx)
	stopProfile := func() {}
	if r.cfg.cpuProfiles != "" {
		stop, err := StartCPUProfile(filepath.Join(r.cfg.cpuProfiles, fmt.Sprintf("%s-r%d-%s.cpu", r.impl.Name, r.round, name)))
		if err != nil {
			return Phase{}, err
		}
		var once sync.Once
		stopProfile = func() { once.Do(stop) }
		defer stopProfile()
	}
	profiles := r.profileServers(ctx, name)
	if profiles != nil {
		defer profiles.wait()
	}
	cpuBefore := r.serverCPU()
	start := time.Now()
	if err := act(); err != nil {
		return Phase{}, err
	}
	log.Info("started", "after", since(start))

	deadline := start.Add(r.cfg.phaseTimeout)
	if err := r.waitFor(ctx, log, "goal", every, deadline, reached); err != nil {
		return Phase{}, err
	}
	elapsed := time.Since(start)
	busy := busyCores(cpuBefore[machineComponent], elapsed)
	log.Info("goal reached", "after", since(start), "cpuInUse", busy)
	var drainedAfter time.Duration
	if drained != nil {
		if err := r.waitFor(ctx, log, "drained", every, deadline, drained); err != nil {
			return Phase{}, err
		}
		drainedAfter = time.Since(start)
		log.Info("drained", "after", since(start))
	}
	if profiles != nil {
		profiles.end() // no profile starts past the goal; those recording end during the settling
	}

	last, err := r.settle(ctx, time.Now(), deadline)
	if err != nil {
		return Phase{}, err
	}
	recAfter, err := reconciles()
	if err != nil {
		return Phase{}, err
	}
	reqs := r.counter.Snapshot()
	p := NewPhase(reqs, elapsed, max(last.Sub(start), elapsed), recAfter.count-recBefore.count)
	p.ReconcileSeconds = recAfter.seconds - recBefore.seconds
	p.PlaceWaitSeconds = recAfter.waitSeconds - recBefore.waitSeconds
	p.MeanLatencySeconds = r.latency.means()
	p.ServerCPUSeconds = cpuSince(cpuBefore, r.serverCPU())
	p.ServerCPUAboveIdleSeconds = aboveIdle(p.ServerCPUSeconds, r.idle, time.Since(start))
	p.BusyCores = busy
	stopProfile() // the profile holds the phase, not the reading of the metrics
	if writesBefore != nil {
		if after := r.clusterWrites(ctx); after != nil {
			p.ClusterWrites = countsSince(writesBefore, after)
		}
	}
	if syncsBefore != nil {
		if after := r.controllerWork(ctx); after != nil {
			p.ControllerSyncs, p.ControllerSyncSeconds = after.since(*syncsBefore)
		}
	}
	if drained != nil {
		p.DrainedSeconds = drainedAfter.Seconds()
	}
	log.Info("settled", "after", p.SettledSeconds, "requests", p.Requests, "writes", p.WriteCount(), "reconciles", p.Reconciles)
	return p, nil
}

// clusterWrites returns the writes kube-apiserver has served so far (see clusterWrites), or nil,
// logged, when its metrics cannot be read: the figure is left out, the phase goes on.
func (r *run) clusterWrites(ctx context.Context) map[string]float64 {
	w, err := clusterWrites(ctx, r.apiserver)
	if err != nil {
		r.log.Error(err, "the cluster's writes are left out of the phase")
		return nil
	}
	return w
}

// waitFor checks g (what, in errors) every interval until it reports done, the manager fails or the
// deadline passes, logging the state every 10 seconds.
func (r *run) waitFor(ctx context.Context, log logr.Logger, what string, every time.Duration, deadline time.Time, g goal) error {
	start, lastLog := time.Now(), time.Now()
	return pollEvery(ctx, every, func() (bool, error) {
		if err := r.mgr.failed(); err != nil {
			return false, err
		}
		done, state, err := g(ctx)
		if err != nil || done {
			return done, err
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("%s not reached within %s: %s", what, r.cfg.phaseTimeout, state)
		}
		if time.Since(lastLog) >= 10*time.Second {
			log.Info("waiting", "for", what, "state", state, "waited", since(start))
			lastLog = time.Now()
		}
		return false, nil
	})
}

// serverCPU reads the CPU time of the serverComponents, of this process (processComponent) and of the
// whole machine (machineComponent); a component it cannot read is left out (a cluster without process
// access, a component restarted by a fault, a machine without /proc/stat).
func (r *run) serverCPU() map[string]time.Duration {
	return serverCPU(r.env)
}

// serverCPU is run.serverCPU for the cluster of env.
func serverCPU(env *harness.Env) map[string]time.Duration {
	out := map[string]time.Duration{}
	if d, err := processCPU(); err == nil {
		out[processComponent] = d
	}
	if d, err := cluster.MachineCPUTime(); err == nil {
		out[machineComponent] = d
	}
	c := env.Cluster()
	if c == nil {
		return out
	}
	for _, comp := range serverComponents {
		if d, err := c.CPUTime(cluster.Component(comp)); err == nil {
			out[comp] = d
		}
	}
	return out
}

// idleCPU waits until the manager is quiet and the cascade of the primer's deletion is over (no
// ReplicaSet or Pod left in the namespace), then reads how much CPU each component uses per second
// over the idle window while nothing happens: the control plane's background (leases, node
// heartbeats, periodic resyncs) and the idle manager. nil when the window is 0.
func (r *run) idleCPU(ctx context.Context) (map[string]float64, error) {
	if r.cfg.idleWindow == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.phaseTimeout)
	defer cancel()
	if err := waitEmpty(ctx, r.env.Client, []client.ObjectList{&appsv1.ReplicaSetList{}, &corev1.PodList{}}, client.InNamespace(r.ns)); err != nil {
		return nil, err
	}
	if _, err := r.settle(ctx, time.Now(), time.Now().Add(r.cfg.phaseTimeout)); err != nil {
		return nil, err
	}
	before, start := r.serverCPU(), time.Now()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(r.cfg.idleWindow):
	}
	used := cpuSince(before, r.serverCPU())
	elapsed := time.Since(start).Seconds()
	rate := make(map[string]float64, len(used))
	for comp, sec := range used {
		rate[comp] = sec / elapsed
	}
	r.log.Info("idle", "cpuPerSecond", rate)
	return rate, nil
}

// aboveIdle returns, per component of used, the CPU seconds beyond what the component uses idle
// (idle, per second) over a window of that length; nil without idle figures.
func aboveIdle(used, idle map[string]float64, window time.Duration) map[string]float64 {
	if idle == nil || used == nil {
		return nil
	}
	out := map[string]float64{}
	for comp, sec := range used {
		if rate, ok := idle[comp]; ok {
			out[comp] = sec - rate*window.Seconds()
		}
	}
	return out
}

// busyCores returns how many cores the machine's processes kept busy on average since the machine's
// CPU time was before, elapsed ago; 0 when the machine's CPU time cannot be read (then before is 0 too).
func busyCores(before, elapsed time.Duration) float64 {
	now, err := cluster.MachineCPUTime()
	if err != nil || before == 0 || elapsed <= 0 {
		return 0
	}
	return (now - before).Seconds() / elapsed.Seconds()
}

// processCPU returns the CPU time (user and system) this process has used.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// StartCPUProfile starts a CPU profile of the process into path (pprof format) and returns the
// function that stops it and closes the file. A process runs one CPU profile at a time.
func StartCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("start cpu profile %s: %w", path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "bench: close cpu profile %s: %v\n", path, err)
		}
	}, nil
}

// cpuSince returns the CPU seconds used between two serverCPU readings, per component read both
// times (nil when none was).
func cpuSince(before, after map[string]time.Duration) map[string]float64 {
	var out map[string]float64
	for comp, b := range before {
		a, ok := after[comp]
		if !ok || a < b {
			continue // restarted in between: no figure rather than a wrong one
		}
		if out == nil {
			out = map[string]float64{}
		}
		out[comp] = (a - b).Seconds()
	}
	return out
}

// settle waits until the manager has made no request and finished no reconcile for the quiet period
// and returns when it was last seen active (from, if never after it).
func (r *run) settle(ctx context.Context, from, deadline time.Time) (time.Time, error) {
	last := from
	reqs := len(r.counter.Snapshot())
	recs, err := reconcileCount()
	if err != nil {
		return last, err
	}
	err = poll(ctx, func() (bool, error) {
		if time.Since(last) >= r.cfg.quiet {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("manager still busy at the phase deadline (%d requests so far)", reqs)
		}
		nreqs := len(r.counter.Snapshot())
		nrecs, err := reconcileCount()
		if err != nil {
			return false, err
		}
		if nreqs != reqs || nrecs != recs {
			reqs, recs, last = nreqs, nrecs, time.Now()
		}
		return false, nil
	})
	if err != nil {
		return last, err
	}
	return last, nil
}

// forEach calls f for every Welcome name from the configured number of workers and returns the
// first error.
func (r *run) forEach(ctx context.Context, f func(name string) error) error {
	return forEachName(ctx, r.cfg.workers, r.names, f)
}

// forEachName calls f for every name from at most workers goroutines and returns the first error;
// after an error no further name is started.
func forEachName(ctx context.Context, workers int, all []string, f func(name string) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	names := make(chan string)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range min(workers, len(all)) {
		wg.Go(func() {
			for name := range names {
				if err := f(name); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		})
	}
feed:
	for _, name := range all {
		select {
		case names <- name:
		case <-ctx.Done():
			break feed
		}
	}
	close(names)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}

// runningManager is a started manager under measurement.
type runningManager struct {
	// client is the manager's client (reads from its cache).
	client client.Client
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// startManager starts a manager for the implementation: its config counted by r.counter, its cache
// limited to the namespace, metrics and health endpoints off. With waitSync it returns once the Welcome
// informer has synced; without, at once (the restart waits for the reconciles instead: a wait of the
// driver's, checked every 100 ms, would be part of the time measured).
func (r *run) startManager(ctx context.Context, impl Implementation, waitSync bool) (*runningManager, error) {
	opts := manager.Options{
		Scheme:                 r.env.Scheme,
		Logger:                 r.cfg.managerLog.WithValues("implementation", impl.Name),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{r.ns: {}}},
		Controller:             ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	}
	if impl.Cache != nil {
		impl.Cache(&opts.Cache)
	}
	mgr, err := manager.New(r.latency.wrap(r.counter.Wrap(impl.clientConfig(r.env.Config))), opts)
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if err := impl.Setup(mgr); err != nil {
		return nil, fmt.Errorf("set up %s: %w", impl.Name, err)
	}
	mctx, cancel := context.WithCancel(ctx)
	m := &runningManager{client: mgr.GetClient(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		m.err = mgr.Start(mctx)
	}()
	if !waitSync {
		return m, nil
	}
	syncCtx, syncCancel := context.WithTimeout(mctx, r.cfg.phaseTimeout)
	defer syncCancel()
	synced := mgr.GetCache().WaitForCacheSync(syncCtx)
	if synced {
		_, err = mgr.GetCache().GetInformer(syncCtx, &v1alpha1.Welcome{})
	}
	if !synced || err != nil {
		m.stop()
		return nil, fmt.Errorf("manager cache did not sync (manager error: %v, informer error: %v)", m.err, err)
	}
	return m, nil
}

// clientConfig returns a copy of base adjusted by the implementation's Config, base itself unchanged.
func (impl Implementation) clientConfig(base *rest.Config) *rest.Config {
	cfg := rest.CopyConfig(base)
	if impl.Config != nil {
		impl.Config(cfg)
	}
	return cfg
}

// failed returns an error if the manager has stopped on its own; nil while it runs (or for no
// manager, between the two of a restart).
func (m *runningManager) failed() error {
	if m == nil {
		return nil
	}
	select {
	case <-m.done:
		return fmt.Errorf("manager stopped: %v", m.err)
	default:
		return nil
	}
}

// stop stops the manager and waits for it.
func (m *runningManager) stop() {
	m.cancel()
	<-m.done
}

// deleteNamespace deletes the implementation's namespace and waits until it is gone, so that the
// next implementation does not share the cluster with the garbage collection of this one's.
func (r *run) deleteNamespace() {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.phaseTimeout)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns}}
	if err := r.env.Client.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
		r.log.Error(err, "delete namespace", "namespace", r.ns)
		return
	}
	err := poll(ctx, func() (bool, error) {
		return apierrors.IsNotFound(r.env.Client.Get(ctx, client.ObjectKeyFromObject(ns), ns)), nil
	})
	if err != nil {
		r.log.Info("namespace still being deleted", "namespace", r.ns)
	}
}

// writeHeapProfile writes the heap profile of the process to path.
func writeHeapProfile(path string) error {
	// A heap profile shows the heap as of the last garbage collection but one: what that one freed (a
	// sync.Pool's victims, say) would still show as live.
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("heap profile %s: %w", path, err)
	}
	return f.Close()
}

// heap returns the memory statistics after a full garbage collection.
func heap() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

func since(t time.Time) string { return time.Since(t).Round(time.Millisecond).String() }
