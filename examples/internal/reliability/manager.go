package reliability

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/convergo-dev/convergo/testing/harness"
)

// ErrKilled is the error of every request a killed manager tries to make.
var ErrKilled = errors.New("connection cut: the process was killed (injected by the reliability suite)")

// KillSwitch cuts the API connections of the configs it wraps at once, as the death of the process
// would: after Cut, requests in flight are cancelled (open watches end) and new ones fail with
// ErrKilled before leaving the process. It is safe for concurrent use.
type KillSwitch struct {
	root context.Context
	cut  context.CancelFunc
}

// NewKillSwitch returns a switch that lets requests through until Cut.
func NewKillSwitch() *KillSwitch {
	ctx, cancel := context.WithCancel(context.Background())
	return &KillSwitch{root: ctx, cut: cancel}
}

// Wrap returns a copy of cfg whose requests the switch can cut.
func (k *KillSwitch) Wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &killTransport{ks: k, next: rt} })
	return out
}

// Cut cancels every request in flight and fails every later one.
func (k *KillSwitch) Cut() { k.cut() }

// IsCut reports whether Cut was called.
func (k *KillSwitch) IsCut() bool { return k.root.Err() != nil }

type killTransport struct {
	ks   *KillSwitch
	next http.RoundTripper
}

// RoundTrip sends req with a context the switch cancels on Cut.
func (t *killTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.ks.IsCut() {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, ErrKilled
	}
	ctx, cancel := context.WithCancel(req.Context())
	stop := context.AfterFunc(t.ks.root, cancel)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		stop()
		cancel()
		if t.ks.IsCut() {
			return nil, ErrKilled
		}
		return nil, err
	}
	resp.Body = &closeHook{ReadCloser: resp.Body, done: func() { stop(); cancel() }}
	return resp, nil
}

// closeHook runs done once when the body is closed.
type closeHook struct {
	io.ReadCloser
	once sync.Once
	done func()
}

// Close closes the body and runs the hook.
func (c *closeHook) Close() error {
	err := c.ReadCloser.Close()
	c.once.Do(c.done)
	return err
}

// Manager is a controller-runtime manager run by a test, which the test can kill or stop at any
// moment (unlike harness.StartManager, which stops at cleanup).
type Manager struct {
	manager.Manager
	// Requests records every API request the manager made (its counter wraps the manager's config).
	Requests *harness.RequestCounter
	// Name identifies the manager in logs.
	Name string

	kill   *KillSwitch
	cancel context.CancelFunc
	done   chan struct{}
	runErr error
	stop   sync.Once
	live   *atomic.Bool
}

// ManagerOption configures StartManager.
type ManagerOption func(*managerConfig)

type managerConfig struct {
	name      string
	wrap      []func(*rest.Config) *rest.Config
	logger    *logr.Logger
	verbosity int
	mutate    []func(*manager.Options)
}

// WithName names the manager in logs (default "manager").
func WithName(name string) ManagerOption { return func(c *managerConfig) { c.name = name } }

// WithConfig wraps the manager's rest.Config, e.g. with a fakes.Injector's Wrap. Wrappers apply in
// order, inside the kill switch and the request counter.
func WithConfig(wrap func(*rest.Config) *rest.Config) ManagerOption {
	return func(c *managerConfig) { c.wrap = append(c.wrap, wrap) }
}

// WithLogger sets the manager's logger (default: the test's log).
func WithLogger(l logr.Logger) ManagerOption { return func(c *managerConfig) { c.logger = &l } }

// WithLogVerbosity sets the verbosity of the default logger (the test's log; default 0).
func WithLogVerbosity(v int) ManagerOption { return func(c *managerConfig) { c.verbosity = v } }

// WithOptions lets f adjust the manager options.
func WithOptions(f func(*manager.Options)) ManagerOption {
	return func(c *managerConfig) { c.mutate = append(c.mutate, f) }
}

// WithNamespace restricts the manager's caches to namespace ns, so that managers of tests running
// side by side never see each other's objects.
func WithNamespace(ns string) ManagerOption {
	return WithOptions(func(o *manager.Options) {
		o.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}}
	})
}

// WithLeaderElection makes the manager elect a leader through Lease id in namespace ns, with the
// given lease duration (renew deadline and retry period are derived from it: 3/4 and 1/4). The lease
// is not released on stop, as after a crash.
func WithLeaderElection(ns, id string, lease time.Duration) ManagerOption {
	return WithOptions(func(o *manager.Options) {
		o.LeaderElection = true
		o.LeaderElectionNamespace = ns
		o.LeaderElectionID = id
		o.LeaderElectionReleaseOnCancel = false
		o.LeaseDuration = ptr.To(lease)
		o.RenewDeadline = ptr.To(lease * 3 / 4)
		o.RetryPeriod = ptr.To(lease / 4)
	})
}

// managerSyncTimeout bounds the wait for a manager's caches.
const managerSyncTimeout = 2 * time.Minute

// StartManager creates a manager on cfg with scheme (metrics and probes off, controller name
// validation skipped), lets setup register controllers, starts it and waits for its caches to sync.
// The manager is stopped at cleanup if the test did not kill or stop it before.
func StartManager(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme, setup func(manager.Manager) error, opts ...ManagerOption) *Manager {
	t.Helper()
	mc := managerConfig{name: "manager"}
	for _, o := range opts {
		o(&mc)
	}
	m := &Manager{Name: mc.name, Requests: harness.NewRequestCounter(), kill: NewKillSwitch(), live: &atomic.Bool{}}
	m.live.Store(true)
	restCfg := rest.CopyConfig(cfg)
	for _, w := range mc.wrap {
		restCfg = w(restCfg)
	}
	restCfg = m.Requests.Wrap(m.kill.Wrap(restCfg))

	logger := testLogger(t, m.live, mc.name, mc.verbosity)
	if mc.logger != nil {
		logger = *mc.logger
	}
	mopts := manager.Options{
		Scheme:                 scheme,
		Logger:                 logger,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	}
	for _, f := range mc.mutate {
		f(&mopts)
	}
	mgr, err := manager.New(restCfg, mopts)
	if err != nil {
		t.Fatalf("create manager %s: %v", mc.name, err)
	}
	m.Manager = mgr
	if setup != nil {
		if err := setup(mgr); err != nil {
			t.Fatalf("set up manager %s: %v", mc.name, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.done = make(chan struct{})
	go func() {
		defer close(m.done)
		m.runErr = mgr.Start(ctx)
	}()
	t.Cleanup(func() {
		if err := m.Stop(); err != nil {
			t.Errorf("manager %s: %v", mc.name, err)
		}
	})

	syncCtx, syncCancel := context.WithTimeout(ctx, managerSyncTimeout)
	defer syncCancel()
	synced := make(chan bool, 1)
	go func() { synced <- mgr.GetCache().WaitForCacheSync(syncCtx) }()
	select {
	case <-m.done:
		t.Fatalf("manager %s stopped before its caches synced: %v", mc.name, m.runErr)
	case ok := <-synced:
		if !ok {
			t.Fatalf("manager %s: caches did not sync within %s", mc.name, managerSyncTimeout)
		}
	}
	return m
}

// Kill ends the manager as SIGKILL would: its API connections are cut first, so nothing it was
// doing reaches the API server any more (no graceful shutdown, no lease release), then it is
// stopped and waited for. Errors from the dying manager are expected and ignored.
func (m *Manager) Kill() {
	m.stop.Do(func() {
		m.kill.Cut()
		m.cancel()
		<-m.done
		m.live.Store(false)
	})
}

// Killed reports whether Kill was called.
func (m *Manager) Killed() bool { return m.kill.IsCut() }

// Stop stops the manager gracefully and returns its error, if any. Stopping a killed or stopped
// manager returns nil.
func (m *Manager) Stop() error {
	var err error
	m.stop.Do(func() {
		m.cancel()
		<-m.done
		m.live.Store(false)
		if m.runErr != nil && !errors.Is(m.runErr, context.Canceled) {
			err = m.runErr
		}
	})
	return err
}

// Done is closed once the manager has stopped (killed, stopped, or failed, e.g. on losing its
// leader lease).
func (m *Manager) Done() <-chan struct{} { return m.done }

// testLogger logs through t.Log while live; afterwards it drops messages (t.Log panics after the
// test has completed).
func testLogger(t testing.TB, live *atomic.Bool, name string, verbosity int) logr.Logger {
	return funcr.New(func(prefix, args string) {
		if !live.Load() {
			return
		}
		t.Log(fmt.Sprintf("[%s] %s %s", name, prefix, args))
	}, funcr.Options{Verbosity: verbosity})
}

// LogBuffer collects log output; it is safe for concurrent use.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// CaptureLogger returns a zap logger (the one operators use in production, JSON encoded) that writes
// every message, at every verbosity, to buf.
func CaptureLogger(buf *LogBuffer) logr.Logger {
	return zap.New(zap.WriteTo(buf), zap.JSONEncoder(), zap.Level(zapcore.Level(-127)), zap.StacktraceLevel(zapcore.PanicLevel))
}
