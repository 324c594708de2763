package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/bench"
	"github.com/convergo-dev/convergo/bench/baseline"
	"github.com/convergo-dev/convergo/bench/expert"
	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/welcome/controller"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/testing/harness"
)

// defaultImplementations is the default of -impl: Convergo first, the expert (the reference of the
// ratios) in the middle, so that reversing the order every other round keeps it there.
const defaultImplementations = "convergo,expert,baseline"

// implementations are the operators the bench knows, by name.
var implementations = map[string]bench.Implementation{
	"convergo": {
		Name: "convergo", Setup: controller.Setup(), Cache: controller.CacheOptions, Install: installFinalizerPolicy,
		Description: "examples/welcome as shipped: the library's defaults (4 workers and 20 more for Welcomes being deleted, " +
			"as many as the garbage collector's workers, which do the expert's deletions), its main's cache options " +
			"(controller.CacheOptions: childcache.Configure, no managedFields; of the child kinds only Convergo children), " +
			"its config/admission policy (the API server adds the finalizer to new Welcomes; bound to the bench namespace)",
	},
	"expert": {
		Name:  "expert",
		Setup: setupExpert,
		Cache: expert.CacheOptions,
		Description: fmt.Sprintf("bench/expert, written by hand the way experts write controller-runtime code: "+
			"%d workers (expert.DefaultMaxConcurrentReconciles); controllerutil.CreateOrPatch with mutate functions "+
			"that set only its own fields in place (server defaults kept, no request for an unchanged child); "+
			"status merge-patched only when it changed; Welcome updates filtered to generation changes; "+
			"controller references, no finalizer, no events, no requeue; cache without managedFields",
			expert.DefaultMaxConcurrentReconciles),
	},
	"baseline": {
		Name: "baseline",
		Setup: func(mgr manager.Manager) error {
			r := &baseline.Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}
			return r.SetupWithManager(mgr)
		},
		Description: "bench/baseline, the tutorial way: 1 worker (controller-runtime's default, which tutorials keep)",
	},
	// Not measured by default: Convergo's operator with twice its workers, to show what workers change
	// where the time goes into waiting for the API server (-impl convergo,expert,convergo-8).
	"convergo-8": {
		Name: "convergo-8", Setup: controller.Setup(workers(8)), Cache: controller.CacheOptions,
		Install:     installFinalizerPolicy,
		Description: "examples/welcome with 8 workers (MaxConcurrentReconciles 8 through reconcile.WithControllerOptions), besides its places for deletions",
	},
	// Not measured by default: Convergo's operator as shipped but with as many workers as
	// kube-controller-manager's garbage collector (--concurrent-gc-syncs, 20 by default), which does
	// the expert's deletions, for every Welcome (-impl convergo-20,expert,convergo).
	"convergo-20": {
		Name: "convergo-20", Setup: controller.Setup(workers(20)), Cache: controller.CacheOptions,
		Install:     installFinalizerPolicy,
		Description: "examples/welcome with 20 workers (MaxConcurrentReconciles 20 through reconcile.WithControllerOptions), as many as the garbage collector's, besides its places for deletions",
	},
	// Not measured by default: Convergo's operator as shipped but without places of its own for the
	// Welcomes being deleted, to show what those places change (-impl convergo,expert,convergo-shared).
	"convergo-shared": {
		Name: "convergo-shared", Setup: controller.Setup(reconcile.WithDeletionConcurrency(0)), Cache: controller.CacheOptions,
		Install:     installFinalizerPolicy,
		Description: "examples/welcome with its 4 workers, its deletions sharing them (reconcile.WithDeletionConcurrency(0))",
	},
	// Not measured by default: Convergo's operator with controller-runtime's defaults, one worker shared
	// by deletions, to show what the library's defaults change (-impl convergo,expert,convergo-1).
	"convergo-1": {
		Name: "convergo-1", Setup: controller.Setup(workers(1), reconcile.WithDeletionConcurrency(0)), Cache: controller.CacheOptions,
		Install:     installFinalizerPolicy,
		Description: "examples/welcome with controller-runtime's defaults: 1 worker, shared by deletions",
	},
	// Not measured by default: Convergo's operator as shipped, traced: every span recorded by the
	// OpenTelemetry SDK and batched to an exporter that drops them (what tracing costs the operator,
	// not the backend), its API requests traced through rest.Config.Wrap (-impl convergo,expert,convergo-traced).
	"convergo-traced": {
		Name: "convergo-traced", Setup: controller.Setup(reconcile.WithTracerProvider(benchTracerProvider)), Cache: controller.CacheOptions,
		Install: installFinalizerPolicy,
		Config: func(cfg *rest.Config) {
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
				return otelhttp.NewTransport(rt, otelhttp.WithTracerProvider(benchTracerProvider))
			})
		},
		Description: "examples/welcome as shipped, traced: reconcile.WithTracerProvider with the OpenTelemetry SDK sampling every span, " +
			"batched to an exporter that drops them; API requests traced through rest.Config.Wrap(otelhttp.NewTransport)",
	},

	// Not measured by default: the expert with responses uncompressed (rest.Config.DisableCompression,
	// as kube-controller-manager sets it), what an expert who knew would add by hand
	// (-impl convergo,expert,expert-plain).
	"expert-plain": {
		Name:        "expert-plain",
		Setup:       setupExpert,
		Cache:       expert.CacheOptions,
		Config:      func(cfg *rest.Config) { cfg.DisableCompression = true },
		Description: "bench/expert with responses uncompressed (rest.Config.DisableCompression)",
	},
	// Not measured by default: the expert writing its children with server-side applies instead of
	// creates and merge patches, deciding when to write as the expert does, to tell the price of
	// server-side apply, on which Convergo rests, from the rest of Convergo's figures
	// (-impl convergo,expert,expert-apply).
	"expert-apply": {
		Name: "expert-apply",
		Setup: func(mgr manager.Manager) error {
			r := &expert.Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), ServerSideApply: true}
			return r.SetupWithManager(mgr)
		},
		Cache:       expert.CacheOptions,
		Description: "bench/expert writing each child that needs a write with a forced server-side apply of the whole child it owns (expert.Reconciler.ServerSideApply), instead of a create or merge patch",
	},

	// Not measured by default: the baseline given as many workers as Convergo's operator, to show
	// what the workers alone change (-impl convergo,expert,baseline-4).
	"baseline-4": {
		Name: "baseline-4",
		Setup: func(mgr manager.Manager) error {
			r := &baseline.Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), MaxConcurrentReconciles: 4}
			return r.SetupWithManager(mgr)
		},
		Description: "bench/baseline with 4 workers",
	},
}

// benchTracerProvider records every span of convergo-traced and drops it once batched.
var benchTracerProvider = sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))

// setupExpert registers bench/expert's reconciler with mgr.
func setupExpert(mgr manager.Manager) error {
	r := &expert.Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}
	return r.SetupWithManager(mgr)
}

func main() {
	os.Exit(run(os.Args[1:]))
}

// flags are the command-line options.
type flags struct {
	n        int
	nodes    int
	rounds   int
	restarts int
	impls    string
	json     bool
	out      string
	timeout  time.Duration
	quiet    time.Duration
	workers  int
	crd      string
	verbose  bool
	cpuprof  string
	cpuprofs string
	srvprofs string
	heapprof string
	name     string
	noRoll   bool
	floor    bool
}

func parseFlags(args []string) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&f.n, "n", bench.DefaultN, fmt.Sprintf("number of Welcome objects per implementation (1 to %d)", bench.MaxN))
	fs.IntVar(&f.rounds, "rounds", bench.DefaultRounds, "how many times each implementation is measured; the report holds the medians")
	fs.IntVar(&f.restarts, "restarts", bench.DefaultRestarts, "how many times each round restarts each manager, one after the other (and the receiver after each, with -floor); the round's restart figures are the medians")
	fs.IntVar(&f.nodes, "nodes", 0, "number of fake nodes (0: sized for -n, at least 3)")
	fs.StringVar(&f.impls, "impl", defaultImplementations, "comma-separated implementations to measure, in order: convergo, expert (hand-written by an expert; "+
		"when measured, the report's ratios are against it), baseline (the tutorial way), baseline-4 (the baseline with 4 workers), convergo-8 and convergo-20 (Convergo with 8 or 20 workers), convergo-shared (no places of its own for deletions), convergo-1 (controller-runtime's defaults: 1 worker, shared by deletions), convergo-traced (as shipped, every span recorded and API requests traced), expert-plain (the expert with responses uncompressed), expert-apply (the expert writing with server-side applies)")
	fs.BoolVar(&f.json, "json", false, "print the JSON report instead of the markdown table")
	fs.StringVar(&f.out, "out", "", "directory to write <date>-n<N>.md and <date>-n<N>.json to (e.g. bench/results); nothing is written without it")
	fs.DurationVar(&f.timeout, "timeout", bench.DefaultPhaseTimeout, "how long each phase may take")
	fs.DurationVar(&f.quiet, "quiet", bench.DefaultQuietPeriod, "how long a manager must be idle before a phase's requests are complete")
	fs.IntVar(&f.workers, "workers", bench.DefaultWorkers, "concurrent requests of the bench driver")
	fs.StringVar(&f.crd, "crd", "examples/welcome/config/crd/bases", "directory of the Welcome CRD")
	fs.BoolVar(&f.verbose, "v", false, "log the managers' info messages, not only their errors")
	fs.StringVar(&f.heapprof, "heapprofiles", "", "write a heap profile of the bench process into this directory once each implementation has converged (<impl>-r<round>.heap) and just before its converge phase (<impl>-r<round>-before.heap)")
	fs.StringVar(&f.cpuprof, "cpuprofile", "", "write a CPU profile of the bench process (the managers under measurement and the driver) to this file")
	fs.StringVar(&f.cpuprofs, "cpuprofiles", "", "write a CPU profile of the bench process per measured phase into this directory (<impl>-r<round>-<phase>.cpu); not with -cpuprofile")
	fs.StringVar(&f.srvprofs, "serverprofiles", "", "write CPU profiles of kube-apiserver, kube-controller-manager and kube-scheduler for the converge, update and delete phases into this directory, "+
		"each phase as consecutive profiles of "+bench.ServerProfileChunk.String()+" (<impl>-r<round>-<phase>-<component>-<k>.cpu; go tool pprof merges the files given together)")
	fs.StringVar(&f.name, "name", "", "with -out: write <name>.md and <name>.json instead of <date>-n<N> (which a later run of the same day and size overwrites)")
	fs.BoolVar(&f.noRoll, "without-rollout", false, "run kube-controller-manager without the controllers that act on the children (deployment, "+
		"replicaset, endpointslice): measures the managers' own requests and what they cost the API server; converge and update end "+
		"when every Welcome's status is written for its generation")
	fs.BoolVar(&f.floor, "floor", false, "measure what operators cannot shorten: before the first measurement, roll out N Deployments by hand (no operator), "+
		"report when all were available and, scaled to the update's replicas, when all were scaled (the cluster's own part of converge "+
		"and update); after each restart, restart a receiver that only lists, watches and reads each Welcome on the implementation's "+
		"objects (the shortest restart of an operator that lists these objects whole)")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if f.cpuprof != "" && f.cpuprofs != "" {
		return f, errors.New("-cpuprofile and -cpuprofiles cannot be combined: a process runs one CPU profile at a time")
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return f, nil
}

// selectImplementations parses the -impl list.
func selectImplementations(list string) ([]bench.Implementation, error) {
	var out []bench.Implementation
	seen := map[string]bool{}
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" || seen[name] {
			continue
		}
		impl, ok := implementations[name]
		if !ok {
			return nil, fmt.Errorf("unknown implementation %q (known: %s)", name, strings.Join(slices.Sorted(maps.Keys(implementations)), ", "))
		}
		seen[name] = true
		out = append(out, impl)
	}
	if len(out) == 0 {
		return nil, errors.New("no implementation given")
	}
	return out, nil
}

func run(args []string) int {
	f, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 2
	}
	impls, err := selectImplementations(f.impls)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: -impl: %v\n", err)
		return 2
	}

	progress := stderrLogger(0)
	managers := stderrLogger(-1) // errors only
	if f.verbose {
		managers = stderrLogger(0)
	}
	ctrllog.SetLogger(managers)

	if f.cpuprof != "" {
		stopProfile, err := bench.StartCPUProfile(f.cpuprof)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: -cpuprofile: %v\n", err)
			return 1
		}
		defer stopProfile()
	}

	if f.srvprofs != "" {
		if err := os.MkdirAll(f.srvprofs, 0o755); err != nil {
			fmt.Fprintf(os.Stderr, "bench: create %s: %v\n", f.srvprofs, err)
			return 1
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := []bench.Option{
		bench.WithN(f.n),
		bench.WithNodes(f.nodes),
		bench.WithRounds(f.rounds),
		bench.WithRestarts(f.restarts),
		bench.WithPhaseTimeout(f.timeout),
		bench.WithQuietPeriod(f.quiet),
		bench.WithWorkers(f.workers),
		bench.WithCRDPaths(f.crd),
		bench.WithLogger(progress),
		bench.WithManagerLogger(managers),
		bench.WithHeapProfiles(f.heapprof),
		bench.WithCPUProfiles(f.cpuprofs),
		bench.WithServerProfiles(f.srvprofs),
	}
	if f.noRoll {
		opts = append(opts, bench.WithoutRollout())
	}
	if f.floor {
		opts = append(opts, bench.WithFloor())
	}
	report, err := bench.Run(ctx, impls, opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 1
	}
	report.Command = strings.TrimSpace("go run ./bench/cmd/bench " + strings.Join(args, " "))

	md := report.Markdown()
	js, err := report.JSON()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 1
	}
	if f.json {
		os.Stdout.Write(js)
	} else {
		fmt.Print(md)
	}
	if f.out != "" {
		if err := write(f.out, f.name, report, md, js); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			return 1
		}
	}
	return 0
}

// write stores the markdown and JSON reports in dir as <name>.md and .json, <date>-n<N> without a
// name.
func write(dir, name string, report *bench.Report, md string, js []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if name == "" {
		name = bench.ResultName(report)
	}
	base := filepath.Join(dir, name)
	if err := os.WriteFile(base+".md", []byte(md), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := os.WriteFile(base+".json", js, 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	fmt.Fprintf(os.Stderr, "bench: wrote %s.md and %s.json\n", base, base)
	return nil
}

// stderrLogger logs to stderr up to the given verbosity (-1: errors only).
func stderrLogger(verbosity int) logr.Logger {
	return funcr.New(func(prefix, args string) {
		if prefix != "" {
			fmt.Fprintf(os.Stderr, "%s %s: %s\n", time.Now().Format("15:04:05.000"), prefix, args)
			return
		}
		fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05.000"), args)
	}, funcr.Options{Verbosity: verbosity})
}

// installFinalizerPolicy installs the Welcome's admission policy (controller.FinalizerPolicy, what
// config/admission holds) bound to namespace ns, and waits until the API server applies it.
func installFinalizerPolicy(ctx context.Context, c client.Client, ns string) (func(context.Context) error, error) {
	policy, err := controller.FinalizerPolicy()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	probe := &v1alpha1.Welcome{Spec: v1alpha1.WelcomeSpec{Name: "Probe"}}
	return harness.BindAdmissionPolicy(ctx, c, policy, ns, probe, func(o client.Object) bool {
		return controllerutil.ContainsFinalizer(o, controller.Finalizer)
	})
}

// workers is the Reconciler option that runs n workers.
func workers(n int) reconcile.ReconcilerOption {
	return reconcile.WithControllerOptions(func(o *crcontroller.Options) { o.MaxConcurrentReconciles = n })
}
