package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/convergo-dev/convergo/builders"
	dbv1alpha1 "github.com/convergo-dev/convergo/examples/database/api/v1alpha1"
	database "github.com/convergo-dev/convergo/examples/database/controller"
	memcachedv1alpha1 "github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	memcached "github.com/convergo-dev/convergo/examples/memcached/controller"
	tenancyv1alpha1 "github.com/convergo-dev/convergo/examples/tenancy/api/v1alpha1"
	welcomev1alpha1 "github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	welcome "github.com/convergo-dev/convergo/examples/welcome/controller"
	"github.com/convergo-dev/convergo/examples/welcome/localweb"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/assets"
	"github.com/convergo-dev/convergo/testing/cluster"
	"github.com/convergo-dev/convergo/testing/postgres"
)

// namespace is where the demo applies the samples.
const namespace = "demo"

// options are the command-line options.
type options struct {
	keep      bool
	nodes     int
	timeout   time.Duration
	runDir    string
	servePage bool
	traces    bool // send the operators' traces to a private Jaeger and show one
	pagePort  *int // the local port of the page; nil: the port the operator rendered
	// openPage, when set with servePage, also opens the page at url and checks that it greets name
	// (the test opens it in a browser). It is called after each start of the local web server.
	openPage func(ctx context.Context, url, name string) error
}

// demo holds what the steps share.
type demo struct {
	out     io.Writer
	opts    options
	root    string
	runDir  string
	client  client.Client
	clients kubernetes.Interface
	web     string    // the web server's binary, with servePage
	webLog  io.Writer // its log, with servePage
	pg      *postgres.Server
	pool    *pgxpool.Pool // pg's superuser postgres: the Database operator's, and the admin's
	tracing *tracing      // nil without traces
	config  *rest.Config  // the local cluster's (the tenancy operator's hub)
}

func run(ctx context.Context, out io.Writer, opts options) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	runDir := opts.runDir
	if !filepath.IsAbs(runDir) {
		runDir = filepath.Join(root, runDir)
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", runDir, err)
	}

	// First, as it fails at once when the PostgreSQL server binaries are missing.
	step(out, "Starting a private PostgreSQL server for the Database operator (testing/postgres)")
	pg, pool, stopPostgres, err := startPostgres(ctx, out, root, filepath.Join(runDir, "postgres.log"))
	if err != nil {
		return err
	}
	defer stopPostgres()

	step(out, "Locating or building the control-plane binaries (the first build takes several minutes)")
	binDir, err := assets.Ensure(ctx, assets.WithComponents(assets.ClusterComponents()...), assets.WithProgress(os.Stderr))
	if err != nil {
		return fmt.Errorf("control-plane binaries: %w", err)
	}
	var web string
	var webLog io.Writer
	if opts.servePage {
		step(out, "--serve-page: building the Welcome web server (go build ./examples/welcome/web) to serve its page on this machine")
		if web, err = localweb.Build(ctx, root, runDir); err != nil {
			return err
		}
		logPath := filepath.Join(runDir, "welcome-web.log")
		f, err := os.Create(logPath)
		if err != nil {
			return fmt.Errorf("create the web server's log: %w", err)
		}
		defer f.Close()
		webLog = f
		fmt.Fprintf(out, "  %s (log: %s)\n", relative(root, web), relative(root, logPath))
	}

	step(out, fmt.Sprintf("Starting a local cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok with %d nodes", opts.nodes))
	clusterDir := filepath.Join(runDir, "cluster")
	if err := os.RemoveAll(clusterDir); err != nil {
		return fmt.Errorf("remove the previous run's cluster: %w", err)
	}
	began := time.Now()
	c, err := cluster.Start(ctx, cluster.WithBinaryDir(binDir), cluster.WithNodes(opts.nodes), cluster.WithRunDir(clusterDir))
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(out, "Stopping the cluster.")
		if err := c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		}
	}()
	fmt.Fprintf(out, "Cluster ready in %s: nodes %s.\n", time.Since(began).Round(100*time.Millisecond), strings.Join(c.Nodes, ", "))

	step(out, "Installing the Memcached, Welcome and Database CRDs")
	crds, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{
		Paths: []string{
			filepath.Join(root, "examples", "memcached", "config", "crd", "bases"),
			filepath.Join(root, "examples", "welcome", "config", "crd", "bases"),
			filepath.Join(root, "examples", "database", "config", "crd", "bases"),
		},
		ErrorIfPathMissing: true,
		MaxTime:            opts.timeout,
	})
	if err != nil {
		return fmt.Errorf("install CRDs: %w", err)
	}
	for _, crd := range crds {
		fmt.Fprintf(out, "  %s\n", crd.Name)
	}

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, memcachedv1alpha1.AddToScheme, welcomev1alpha1.AddToScheme, dbv1alpha1.AddToScheme, tenancyv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return fmt.Errorf("build scheme: %w", err)
		}
	}
	// The operators' own copy of the configuration: with traces, their API requests are traced.
	operatorConfig := rest.CopyConfig(c.Config)
	var tr *tracing
	if opts.traces {
		jaegerLog := filepath.Join(runDir, "jaeger.log")
		step(out, "Starting a private Jaeger for the operators' traces (testing/jaeger; log: "+relative(root, jaegerLog)+")")
		f, err := os.Create(jaegerLog)
		if err != nil {
			return fmt.Errorf("create jaeger's log: %w", err)
		}
		defer f.Close()
		var stopTracing func()
		if tr, stopTracing, err = startTracing(ctx, f, operatorConfig); err != nil {
			return err
		}
		defer stopTracing()
		fmt.Fprintf(out, "  OTLP/HTTP at %s, query API at %s/api/traces?service=%s\n", tr.jaeger.OTLPEndpoint(), tr.jaeger.QueryURL(), traceService)
	}
	logPath := filepath.Join(runDir, "operators.log")
	stopOperators, err := startOperators(operatorConfig, scheme, logPath, databaseServer(pg, pool))
	if err != nil {
		return err
	}
	defer stopOperators()
	step(out, "Running the Memcached, Welcome and Database operators in one manager (the Database operator on the private PostgreSQL, observing it every "+
		observeInterval.String()+"; logs: "+relative(root, logPath)+")")

	cl, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("create clientset: %w", err)
	}
	d := &demo{out: out, opts: opts, root: root, runDir: runDir, client: cl, clients: cs, web: web, webLog: webLog, pg: pg, pool: pool, tracing: tr, config: c.Config}
	if err := d.steps(ctx); err != nil {
		return err
	}
	if !opts.keep {
		step(out, "Done: every step went as expected.")
		return nil
	}

	step(out, "--keep: applying the samples again, creating Database "+databaseSample+" again, and leaving everything running")
	if err := d.applySamples(ctx); err != nil {
		return err
	}
	if err := d.waitReady(ctx, map[string]int32{"Memcached/sessions": 3, "Welcome/alice": 2}); err != nil {
		return err
	}
	if err := d.keepDatabase(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nThe cluster, PostgreSQL and the operators keep running. In another terminal:\n\n"+
		"  export KUBECONFIG=%s\n"+
		"  kubectl get welcomes,memcacheds,databases -n %s\n"+
		"  kubectl get deployments,services,configmaps,pods -n %s\n"+
		"  kubectl wait --for=condition=Ready welcome/alice -n %s\n", c.KubeconfigPath, namespace, namespace, namespace)
	fmt.Fprintf(out, "\nConnect as Database %s's application does, with the uri in its Secret, or as PostgreSQL's admin (the superuser postgres):\n\n"+
		"  psql \"$(kubectl get secret %s -n %s -o jsonpath='{.data.uri}' | base64 -d)\"\n"+
		"  psql %s\n", databaseSample, database.SecretName(sampleDatabase()), namespace, pg.URL())
	if opts.servePage {
		return d.keepServingPage(ctx)
	}
	fmt.Fprintln(out, "\nPress Ctrl-C to stop.")
	<-ctx.Done()
	return nil
}

// startOperators runs the Memcached, Welcome and Database controllers in one manager on cfg, logging
// to logPath, the Database controller managing databases on server, and returns a function that
// stops it.
func startOperators(cfg *rest.Config, scheme *runtime.Scheme, logPath string, server database.Server) (func(), error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create operator log: %w", err)
	}
	logger := zap.New(zap.WriteTo(logFile))
	ctrl.SetLogger(logger)
	opts := ctrl.Options{
		Scheme:                 scheme,
		Logger:                 logger,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	}
	memcached.CacheOptions(&opts.Cache)
	welcome.CacheOptions(&opts.Cache)
	// Not database.CacheOptions: it would cache only the Database operator's Secrets, and the Welcome
	// controller in this manager reads every Secret's metadata (its password Secret is no child).
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("create manager: %w", err)
	}
	for _, setup := range []func(ctrl.Manager) error{memcached.SetupWithManager, welcome.SetupWithManager, database.Setup(server)} {
		if err := setup(mgr); err != nil {
			logFile.Close()
			return nil, err
		}
	}
	stop := startManager(mgr, "operators")
	return func() {
		stop()
		logFile.Close()
	}, nil
}

// startManager starts mgr and returns the function that stops it, which reports the manager's error
// under what.
func startManager(mgr ctrl.Manager, what string) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintf(os.Stderr, "demo: %s: %v\n", what, err)
		}
	}
}

// steps runs the demo proper: apply, recover from the missing Secret, scale up, delete in order; then
// the Database operator's part (databaseSteps).
func (d *demo) steps(ctx context.Context) error {
	step(d.out, `Creating namespace "`+namespace+`" (Pod Security Standard "restricted" enforced) and applying the samples`)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
	}}}
	if err := d.client.Create(ctx, ns); err != nil {
		return fmt.Errorf("create namespace: %w", err)
	}
	if err := d.applySamples(ctx); err != nil {
		return err
	}
	fmt.Fprintln(d.out, "The Welcome names a password Secret that does not exist yet:")
	err := d.watchTable(ctx, func(objs []object) bool {
		w := find(objs, "Welcome/alice")
		return w != nil && w.condition(status.Stalled) == "True/"+welcome.ReasonSecretNotFound
	})
	if err != nil {
		return err
	}

	step(d.out, "Creating Secret alice-password with a random password (never printed, never in the Welcome)")
	password := make([]byte, 18)
	if _, err := rand.Read(password); err != nil {
		return fmt.Errorf("generate password: %w", err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "alice-password"},
		Data:       map[string][]byte{"password": []byte(base64.RawURLEncoding.EncodeToString(password))},
	}
	if err := d.client.Create(ctx, secret); err != nil {
		return fmt.Errorf("create secret: %w", err)
	}
	if err := d.waitReady(ctx, map[string]int32{"Memcached/sessions": 3, "Welcome/alice": 2}); err != nil {
		return err
	}

	step(d.out, "Scaling up: Memcached sessions 3 -> 5 pods, Welcome alice 2 -> 4 pods")
	if err := d.patch(ctx, &memcachedv1alpha1.Memcached{}, "sessions", `{"spec":{"size":5}}`); err != nil {
		return err
	}
	if err := d.patch(ctx, &welcomev1alpha1.Welcome{}, "alice", `{"spec":{"replicas":4}}`); err != nil {
		return err
	}
	if err := d.waitReady(ctx, map[string]int32{"Memcached/sessions": 5, "Welcome/alice": 4}); err != nil {
		return err
	}
	if d.tracing != nil {
		if err := d.showTrace(ctx, "alice"); err != nil {
			return err
		}
	}
	if d.opts.servePage {
		if err := d.servePage(ctx); err != nil {
			return err
		}
	}
	if err := d.deleteInOrder(ctx); err != nil {
		return err
	}
	if err := d.databaseSteps(ctx); err != nil {
		return err
	}
	return d.tenancySteps(ctx)
}

// newSite returns the local web server of Welcome alice.
func (d *demo) newSite() *localweb.Site {
	opts := []localweb.Option{localweb.WithLog(d.webLog), localweb.WithDir(d.runDir)}
	if d.opts.pagePort != nil {
		opts = append(opts, localweb.WithPort(*d.opts.pagePort))
	}
	return localweb.NewSite(d.client, types.NamespacedName{Namespace: namespace, Name: "alice"}, d.web, opts...)
}

// servePage runs Welcome alice's web server as a local process with the configuration the operator
// rendered and checks its page; then it renames the Welcome and, once the operator's rollout is done,
// restarts the server from the new configuration and checks that the page greets the new name.
func (d *demo) servePage(ctx context.Context) error {
	step(d.out, "Serving Welcome alice's page on this machine: the web server as a local process, with the configuration the operator rendered (kwok's pods serve nothing)")
	site := d.newSite()
	defer func() {
		if err := site.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		}
	}()
	if err := d.syncPage(ctx, site, "Alice"); err != nil {
		return err
	}

	step(d.out, `Renaming: Welcome alice spec.name "Alice" -> "Alice Liddell"; the operator renders a new Deployment, which rolls out`)
	if err := d.patch(ctx, &welcomev1alpha1.Welcome{}, "alice", `{"spec":{"name":"Alice Liddell"}}`); err != nil {
		return err
	}
	if err := d.waitReady(ctx, map[string]int32{"Memcached/sessions": 5, "Welcome/alice": 4}); err != nil {
		return err
	}
	key := types.NamespacedName{Namespace: namespace, Name: "alice"}
	var w welcomev1alpha1.Welcome
	if err := d.client.Get(ctx, key, &w); err != nil {
		return fmt.Errorf("get welcome alice: %w", err)
	}
	var dep appsv1.Deployment
	if err := d.client.Get(ctx, key, &dep); err != nil {
		return fmt.Errorf("get deployment alice: %w", err)
	}
	fmt.Fprintf(d.out, "\nWelcome alice is Ready for generation %d and Deployment/alice has rolled out generation %d "+
		"(%d/%d pods updated): restarting the local web server from the new configuration.\n",
		w.Generation, dep.Status.ObservedGeneration, dep.Status.UpdatedReplicas, ptr.Deref(dep.Spec.Replicas, 1))
	return d.syncPage(ctx, site, "Alice Liddell")
}

// syncPage (re)starts the local web server from the Deployment's current configuration, prints it and
// the page's URL, and checks that the page greets name and that the private page takes the password.
func (d *demo) syncPage(ctx context.Context, site *localweb.Site, name string) error {
	ctx, cancel := context.WithTimeout(ctx, d.opts.timeout)
	defer cancel()
	started, reason, err := site.Sync(ctx)
	if err != nil {
		return fmt.Errorf("serve the page: %w", err)
	}
	if !started {
		return fmt.Errorf("serve the page: the local web server was not restarted: %s", reason)
	}
	p := site.Process()
	printPageConfig(d.out, d.root, p)
	if err := checkPage(ctx, p, name); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\n  Page: %s  (greets %q)\n", p.URL, "Hello "+name)
	if _, ok := p.Config.Lookup("PASSWORD"); ok {
		fmt.Fprintf(d.out, "  Private page: %s  (accepts the password from the Secret, which the demo never prints)\n", privateURL(p.URL))
	}
	if d.opts.openPage != nil {
		if err := d.opts.openPage(ctx, p.URL, name); err != nil {
			return fmt.Errorf("open the page: %w", err)
		}
	}
	return nil
}

// keepServingPage serves Welcome alice's page until ctx is done, restarting the local web server after
// each rollout that changes its configuration.
func (d *demo) keepServingPage(ctx context.Context) error {
	step(d.out, "--serve-page: serving Welcome alice's page on this machine until interrupted")
	site := d.newSite()
	defer func() { _ = site.Stop() }() // on Ctrl-C the server has stopped by itself too
	if err := d.syncPage(ctx, site, "Alice"); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\nThe page follows the Welcome: after, for instance,\n\n"+
		"  kubectl patch welcome alice -n %s --type merge -p '{\"spec\":{\"name\":\"Bob\"}}'\n\n"+
		"and the operator's rollout, the local web server restarts with the new configuration and greets Bob.\n\n"+
		"Press Ctrl-C to stop.\n", namespace)
	lastErr := ""
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
		started, _, err := site.Sync(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			if err.Error() != lastErr {
				fmt.Fprintf(d.out, "  page: %v (trying again every second)\n", err)
				lastErr = err.Error()
			}
		case started:
			lastErr = ""
			name, _ := site.Process().Config.Lookup("NAME")
			fmt.Fprintf(d.out, "  [%s] rollout done, local web server restarted with the new configuration: %s greets %q\n",
				time.Now().Format(time.TimeOnly), site.Process().URL, "Hello "+name)
		}
	}
}

// printPageConfig prints the configuration the local web server runs with: the container's environment
// (values from Secrets not shown), its volumes, and what the local process gets changed.
func printPageConfig(out io.Writer, root string, p *localweb.Process) {
	cfg := p.Config
	fmt.Fprintf(out, "  Container %q of Deployment %s, as rolled out:\n", cfg.Container, cfg.Deployment)
	for _, a := range cfg.Args {
		fmt.Fprintf(out, "    arg %s\n", a)
	}
	for _, e := range cfg.Env {
		switch {
		case e.Secret:
			fmt.Fprintf(out, "    env %s from %s (not printed)\n", e.Name, e.From)
		case e.From != "":
			fmt.Fprintf(out, "    env %s=%s (from %s)\n", e.Name, e.Value, e.From)
		default:
			fmt.Fprintf(out, "    env %s=%s\n", e.Name, e.Value)
		}
	}
	for _, m := range cfg.Mounts {
		fmt.Fprintf(out, "    volume %s (%s) at %s: %s\n", m.Volume, m.From, m.Path, strings.Join(slices.Sorted(maps.Keys(m.Files)), ", "))
	}
	fmt.Fprintln(out, "  For the local process:")
	for _, r := range p.Rewrites {
		fmt.Fprintf(out, "    %s\n", r)
	}
	fmt.Fprintf(out, "    the volumes' files written under %s\n", relative(root, p.Dir))
}

// checkPage checks that the page greets name and, when the container has a PASSWORD, that the private
// page refuses a request without it and accepts the password.
func checkPage(ctx context.Context, p *localweb.Process, name string) error {
	body, status, err := get(ctx, p.URL, "")
	if err != nil {
		return err
	}
	if want := "<h1>Hello " + html.EscapeString(name) + "</h1>"; status != http.StatusOK || !strings.Contains(body, want) {
		return fmt.Errorf("the page %s does not greet %s (status %d, want %s in):\n%s", p.URL, name, status, want, body)
	}
	password, ok := p.Config.Lookup("PASSWORD")
	if !ok {
		return nil
	}
	priv := privateURL(p.URL)
	if _, status, err = get(ctx, priv, ""); err != nil {
		return err
	}
	if status != http.StatusUnauthorized {
		return fmt.Errorf("the private page %s answers %d without the password, want %d", priv, status, http.StatusUnauthorized)
	}
	body, status, err = get(ctx, priv, password)
	if err != nil {
		return err
	}
	if want := "Welcome back, " + name; status != http.StatusOK || !strings.Contains(body, want) {
		return fmt.Errorf("the private page %s does not take the Secret's password (status %d, want %q)", priv, status, want)
	}
	return nil
}

// privateURL returns the address of the private page of the server whose page is at page.
func privateURL(page string) string {
	u, err := url.Parse(page)
	if err != nil {
		return page
	}
	u.Path = "/private/"
	return u.String()
}

// get fetches addr, with basic auth when password is set, and returns its body and status.
func get(ctx context.Context, addr, password string) (string, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, addr, nil)
	if err != nil {
		return "", 0, fmt.Errorf("get %s: %w", addr, err)
	}
	if password != "" {
		req.SetBasicAuth("demo", password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("get %s: %w", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", 0, fmt.Errorf("get %s: %w", addr, err)
	}
	return string(body), resp.StatusCode, nil
}

// applySamples creates the objects of both examples' config/samples in the demo namespace.
func (d *demo) applySamples(ctx context.Context) error {
	for _, ex := range []string{"memcached", "welcome"} {
		dir := filepath.Join(d.root, "examples", ex, "config", "samples")
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			return fmt.Errorf("list samples: %w", err)
		}
		for _, f := range files {
			if filepath.Base(f) == "kustomization.yaml" {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				return fmt.Errorf("read sample: %w", err)
			}
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(data, &u.Object); err != nil {
				return fmt.Errorf("%s: %w", relative(d.root, f), err)
			}
			u.SetNamespace(namespace)
			if err := d.client.Create(ctx, u); err != nil {
				return fmt.Errorf("apply %s: %w", relative(d.root, f), err)
			}
			fmt.Fprintf(d.out, "  %s/%s from %s\n", u.GetKind(), u.GetName(), relative(d.root, f))
		}
	}
	return nil
}

// waitReady prints the status table until every object named in want ("Kind/name" to desired
// replicas) is Ready for its current generation with that many ready replicas.
func (d *demo) waitReady(ctx context.Context, want map[string]int32) error {
	return d.watchTable(ctx, func(objs []object) bool {
		for name, replicas := range want {
			o := find(objs, name)
			if o == nil || !o.ready() || o.readyReplicas != replicas {
				return false
			}
		}
		return true
	})
}

// watchTable prints the status table whenever it changes until done accepts the objects.
func (d *demo) watchTable(ctx context.Context, done func([]object) bool) error {
	ctx, cancel := context.WithTimeout(ctx, d.opts.timeout)
	defer cancel()
	began := time.Now()
	last := ""
	for {
		objs, err := d.objects(ctx)
		if err != nil {
			return err
		}
		if table := render(objs); table != last {
			fmt.Fprintf(d.out, "\n[%5.1fs]\n%s", time.Since(began).Seconds(), table)
			last = table
		}
		if done(objs) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the operators: %w", context.Cause(ctx))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// deleteInOrder deletes the Welcome and the Memcached and shows their children disappear, checking
// that each operator deletes them in reverse dependency order.
func (d *demo) deleteInOrder(ctx context.Context) error {
	step(d.out, "Deleting Welcome alice and Memcached sessions: each operator removes its children in reverse order")
	ctx, cancel := context.WithTimeout(ctx, d.opts.timeout)
	defer cancel()
	deleted, stopWatches, err := d.watchDeletions(ctx)
	if err != nil {
		return err
	}
	defer stopWatches()
	began := time.Now()
	for _, obj := range []client.Object{
		&welcomev1alpha1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "alice"}},
		&memcachedv1alpha1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "sessions"}},
	} {
		if err := d.client.Delete(ctx, obj); err != nil {
			return fmt.Errorf("delete %s: %w", obj.GetName(), err)
		}
	}
	// Each operator's children, and for each the children that must be gone before it: a child is
	// deleted only once every child that depends on it is gone; independent children go at once.
	want := map[string]map[string][]string{
		welcome.Name:   {"Deployment/alice": nil, "Service/alice": nil, "ConfigMap/alice": {"Deployment/alice"}},
		memcached.Name: {"Service/sessions": nil, "Deployment/sessions": {"Service/sessions"}},
	}
	total := 0
	for _, children := range want {
		total += len(children)
	}
	var seen []deletion
	for len(seen) < total {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the children to be deleted (seen: %v): %w", seen, context.Cause(ctx))
		case del := <-deleted:
			fmt.Fprintf(d.out, "  +%4.2fs  %-20s deleted (by %s)\n", time.Since(began).Seconds(), del.name, del.operator)
			seen = append(seen, del)
		}
	}
	// Deletions of different operators interleave; within one operator they must follow the graph.
	slices.SortStableFunc(seen, func(a, b deletion) int { return compareRevisions(a.revision, b.revision) })
	for _, operator := range []string{welcome.Name, memcached.Name} {
		var got []string
		for _, del := range seen {
			if del.operator == operator {
				got = append(got, del.name)
			}
		}
		order, err := inDependencyOrder(got, want[operator])
		if err != nil {
			return fmt.Errorf("%s deleted its children in the order %v: %w", operator, got, err)
		}
		fmt.Fprintf(d.out, "  %s: %s, in order.\n", operator, order)
	}
	return d.watchTable(ctx, func(objs []object) bool { return len(objs) == 0 })
}

// deletion is one child's disappearance as seen by a watch.
type deletion struct {
	name     string // Kind/name
	operator string // the managed-by label
	revision string // the resourceVersion of the deletion
}

// watchDeletions watches the Services, Deployments and ConfigMaps of the namespace that an example
// operator manages and reports their deletions.
func (d *demo) watchDeletions(ctx context.Context) (<-chan deletion, func(), error) {
	sel := metav1.ListOptions{LabelSelector: builders.ManagedByLabel + " in (" + memcached.Name + "," + welcome.Name + ")"}
	var watches []watch.Interface
	stop := func() {
		for _, w := range watches {
			w.Stop()
		}
	}
	for kind, start := range map[string]func() (watch.Interface, error){
		"Service":    func() (watch.Interface, error) { return d.clients.CoreV1().Services(namespace).Watch(ctx, sel) },
		"Deployment": func() (watch.Interface, error) { return d.clients.AppsV1().Deployments(namespace).Watch(ctx, sel) },
		"ConfigMap":  func() (watch.Interface, error) { return d.clients.CoreV1().ConfigMaps(namespace).Watch(ctx, sel) },
	} {
		w, err := start()
		if err != nil {
			stop()
			return nil, nil, fmt.Errorf("watch %ss: %w", kind, err)
		}
		watches = append(watches, w)
	}
	out := make(chan deletion, 16)
	for _, w := range watches {
		go func() {
			for ev := range w.ResultChan() {
				if ev.Type != watch.Deleted {
					continue
				}
				obj, ok := ev.Object.(client.Object)
				if !ok {
					continue
				}
				kind := strings.TrimPrefix(fmt.Sprintf("%T", obj), "*v1.")
				out <- deletion{
					name:     kind + "/" + obj.GetName(),
					operator: obj.GetLabels()[builders.ManagedByLabel],
					revision: obj.GetResourceVersion(),
				}
			}
		}()
	}
	return out, stop, nil
}

// compareRevisions orders resourceVersions. They are opaque to clients in general; this demo's
// single etcd hands them out in increasing order, which is all it relies on to show the order.
func compareRevisions(a, b string) int {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return 0
	}
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// patch applies a JSON merge patch to the named object of obj's type in the demo namespace.
func (d *demo) patch(ctx context.Context, obj client.Object, name, patch string) error {
	obj.SetNamespace(namespace)
	obj.SetName(name)
	if err := d.client.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		return fmt.Errorf("patch %s: %w", name, err)
	}
	return nil
}

// object is one row of the status table.
type object struct {
	kind, name          string
	generation          int64
	desired             int32
	readyReplicas       int32
	conditions          []metav1.Condition
	conditionGeneration bool // every condition is for the current generation
	noReplicas          bool // a kind without replicas (a Database): READY shows "-"
}

func (o *object) key() string { return o.kind + "/" + o.name }

// condition returns "Status/Reason" of a condition, or "".
func (o *object) condition(t string) string {
	for _, c := range o.conditions {
		if c.Type == t {
			return string(c.Status) + "/" + c.Reason
		}
	}
	return ""
}

func (o *object) ready() bool {
	return o.conditionGeneration && strings.HasPrefix(o.condition(status.Ready), "True/")
}

// objects lists the Memcacheds, Welcomes and Databases of the demo namespace.
func (d *demo) objects(ctx context.Context) ([]object, error) {
	var mcs memcachedv1alpha1.MemcachedList
	if err := d.client.List(ctx, &mcs, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list memcacheds: %w", err)
	}
	var ws welcomev1alpha1.WelcomeList
	if err := d.client.List(ctx, &ws, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list welcomes: %w", err)
	}
	var out []object
	for _, m := range mcs.Items {
		out = append(out, newObject("Memcached", &m, m.Spec.Size, m.Status.ReadyReplicas, m.Status.Conditions))
	}
	for _, w := range ws.Items {
		replicas := int32(1)
		if w.Spec.Replicas != nil {
			replicas = *w.Spec.Replicas
		}
		out = append(out, newObject("Welcome", &w, replicas, w.Status.ReadyReplicas, w.Status.Conditions))
	}
	var dbs dbv1alpha1.DatabaseList
	if err := d.client.List(ctx, &dbs, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list databases: %w", err)
	}
	for _, db := range dbs.Items {
		o := newObject("Database", &db, 0, 0, db.Status.Conditions)
		o.noReplicas = true
		out = append(out, o)
	}
	return out, nil
}

func newObject(kind string, obj client.Object, desired, ready int32, conds []metav1.Condition) object {
	o := object{kind: kind, name: obj.GetName(), generation: obj.GetGeneration(), desired: desired, readyReplicas: ready, conditions: conds}
	o.conditionGeneration = len(conds) > 0
	for _, c := range conds {
		if c.ObservedGeneration != o.generation {
			o.conditionGeneration = false
		}
	}
	return o
}

func find(objs []object, key string) *object {
	for i := range objs {
		if objs[i].key() == key {
			return &objs[i]
		}
	}
	return nil
}

// render formats the status table.
func render(objs []object) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "KIND\tNAME\tREADY\tCONDITIONS")
	for _, o := range objs {
		var conds []string
		for _, c := range o.conditions {
			s := c.Type + "=" + string(c.Status)
			if c.Status != metav1.ConditionTrue || c.Type != status.Ready {
				s += " (" + c.Reason + ")"
			}
			conds = append(conds, s)
		}
		if len(conds) == 0 {
			conds = []string{"-"}
		}
		ready := fmt.Sprintf("%d/%d", o.readyReplicas, o.desired)
		if o.noReplicas {
			ready = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", o.kind, o.name, ready, strings.Join(conds, ", "))
	}
	if len(objs) == 0 {
		fmt.Fprintln(w, "(none)\t\t\t")
	}
	w.Flush()
	return b.String()
}

func step(out io.Writer, msg string) {
	fmt.Fprintf(out, "\n==> %s\n", msg)
}

// relative returns path relative to the repository root, for display.
func relative(root, path string) string {
	if rel, err := filepath.Rel(root, path); err == nil {
		return rel
	}
	return path
}

// moduleRoot returns the repository root: the closest directory above the working directory whose
// go.mod declares the Convergo module.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the repository root: %w", err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/convergo-dev/convergo\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find the repository root: run the demo inside the Convergo repository (make demo)")
		}
		dir = parent
	}
}

// inDependencyOrder checks that got (names in deletion order) holds exactly the children of after,
// each deleted after the children after names for it, and renders the order as
// "Deployment/a, Service/a, ConfigMap/a (ConfigMap/a after Deployment/a)".
func inDependencyOrder(got []string, after map[string][]string) (string, error) {
	pos := map[string]int{}
	for i, name := range got {
		if _, ok := after[name]; !ok {
			return "", fmt.Errorf("unexpected deletion of %s", name)
		}
		if _, dup := pos[name]; dup {
			return "", fmt.Errorf("%s deleted twice", name)
		}
		pos[name] = i
	}
	var edges []string
	for _, name := range slices.Sorted(maps.Keys(after)) {
		if _, ok := pos[name]; !ok {
			return "", fmt.Errorf("%s was not deleted", name)
		}
		for _, first := range after[name] {
			if pos[first] > pos[name] {
				return "", fmt.Errorf("%s was deleted before %s, which depends on it", name, first)
			}
			edges = append(edges, name+" after "+first)
		}
	}
	return fmt.Sprintf("%s (%s)", strings.Join(got, ", "), strings.Join(edges, "; ")), nil
}
