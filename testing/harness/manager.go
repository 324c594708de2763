package harness

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// managerSyncTimeout bounds the wait for a test manager's caches to sync.
const managerSyncTimeout = 2 * time.Minute

// ManagerOption configures StartManager.
type ManagerOption func(*managerConfig)

type managerConfig struct {
	restConfig *rest.Config
	logger     *logr.Logger
	mutate     []func(*manager.Options)
}

// WithManagerConfig makes the manager use cfg instead of the environment's admin config, e.g. a config
// wrapped by a RequestCounter or by fakes.InjectFaults.
func WithManagerConfig(cfg *rest.Config) ManagerOption {
	return func(c *managerConfig) { c.restConfig = cfg }
}

// WithManagerLogger sets the manager's logger. The default logs through t.Log, so controller logs show
// for failing tests and with go test -v.
func WithManagerLogger(l logr.Logger) ManagerOption {
	return func(c *managerConfig) { c.logger = &l }
}

// WithManagerOptions lets f adjust the manager options after the harness has filled them in (cache
// options, a different scheme, ...).
func WithManagerOptions(f func(*manager.Options)) ManagerOption {
	return func(c *managerConfig) { c.mutate = append(c.mutate, f) }
}

// StartManager creates a controller-runtime manager (metrics and health probes off, no leader election,
// controller name validation skipped so tests may reuse names), lets setup register controllers, runs it
// until the test ends and waits for its caches to sync before returning. With WithWebhooks, the
// manager's webhook server serves where the installed configurations point (WebhookOptions), and when
// setup registered a webhook (builder.WebhookManagedBy, say) StartManager also waits until the server
// answers. At cleanup the manager is stopped and waited for; an error from it fails the test. The
// manager's client reads from its cache.
func (e *Env) StartManager(t testing.TB, setup func(mgr manager.Manager) error, opts ...ManagerOption) manager.Manager {
	t.Helper()
	mc := managerConfig{restConfig: e.Config}
	for _, o := range opts {
		o(&mc)
	}
	live := &atomic.Bool{}
	live.Store(true)
	logger := testLogger(t, live)
	if mc.logger != nil {
		logger = *mc.logger
	}
	mopts := manager.Options{
		Scheme:                 e.Scheme,
		Logger:                 logger,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
		Controller:             ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	}
	var hooks *registeringServer
	switch {
	case e.servesWebhooks:
		mopts.WebhookServer = newIdleServer()
	case e.Webhooks != nil:
		hooks = &registeringServer{Server: webhook.NewServer(e.WebhookOptions())}
		mopts.WebhookServer = hooks
	}
	for _, f := range mc.mutate {
		f(&mopts)
	}
	mgr, err := manager.New(mc.restConfig, mopts)
	if err != nil {
		t.Fatalf("create manager: %v", err)
	}
	if setup != nil {
		if err := setup(mgr); err != nil {
			t.Fatalf("set up manager: %v", err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		runErr = mgr.Start(ctx)
	}()
	stop := func() error {
		cancel()
		<-done
		live.Store(false)
		if runErr != nil && !errors.Is(runErr, context.Canceled) {
			return runErr
		}
		return nil
	}

	syncCtx, syncCancel := context.WithTimeout(ctx, managerSyncTimeout)
	defer syncCancel()
	synced := make(chan bool, 1)
	go func() { synced <- mgr.GetCache().WaitForCacheSync(syncCtx) }()
	select {
	case <-done:
		err := stop()
		t.Fatalf("manager stopped before its cache synced: %v", errOrNil(err))
	case ok := <-synced:
		if !ok {
			err := stop()
			t.Fatalf("manager cache did not sync within %s (manager error: %v)", managerSyncTimeout, errOrNil(err))
		}
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	if hooks != nil && mopts.WebhookServer == hooks && hooks.registered.Load() {
		webhookCtx, webhookCancel := context.WithTimeout(ctx, webhookServeTimeout)
		defer webhookCancel()
		if err := e.waitForWebhookServer(webhookCtx); err != nil {
			t.Fatalf("the manager's webhook server at %s did not answer within %s: %v", e.webhookAddress(), webhookServeTimeout, err)
		}
	}
	return mgr
}

func errOrNil(err error) any {
	if err == nil {
		return "none"
	}
	return err
}

// testLogger logs through t.Log while live is true; afterwards (the test is over) it drops messages,
// since t.Log panics once a test has completed.
func testLogger(t testing.TB, live *atomic.Bool) logr.Logger {
	return funcr.New(func(prefix, args string) {
		if !live.Load() {
			return
		}
		if prefix != "" {
			t.Log(fmt.Sprintf("%s: %s", prefix, args))
			return
		}
		t.Log(args)
	}, funcr.Options{Verbosity: 0})
}
