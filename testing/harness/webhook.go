package harness

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// webhookServeTimeout bounds the wait for a test's webhook server to answer.
const webhookServeTimeout = time.Minute

// WithWebhooks installs the MutatingWebhookConfigurations and ValidatingWebhookConfigurations in the
// given directories or files (kubebuilder's config/webhook: manifests.yaml as controller-gen writes it;
// other documents, such as the Service and the kustomization, are skipped), in plain and in
// full-cluster mode. A path that does not exist is an error.
//
// The harness makes a CA and a serving certificate for 127.0.0.1 and localhost, picks a free local
// port, and rewrites every webhook's clientConfig from its Service to
// url: https://127.0.0.1:<port>/<the Service's path>, with the CA as caBundle. CRDs of WithCRDPaths
// whose kinds are convertible in the scheme (conversion.Hub and conversion.Convertible, as
// controller-runtime's conversion webhook requires) get conversion strategy Webhook at
// https://127.0.0.1:<port>/convert, as envtest does (without WithWebhooks, CRDs keep the conversion
// their manifests give).
//
// The test's webhook server serves there: Env.WebhookOptions gives its host, port and certificate
// directory, and a manager started by StartManager serves the webhooks it registers there.
func WithWebhooks(paths ...string) Option {
	return func(c *config) { c.webhookPaths = append(c.webhookPaths, paths...) }
}

// webhookInstallOptions returns envtest's options for the paths of WithWebhooks, or the zero value
// without them (envtest then installs nothing).
func (c *config) webhookInstallOptions() envtest.WebhookInstallOptions {
	if len(c.webhookPaths) == 0 {
		return envtest.WebhookInstallOptions{}
	}
	return envtest.WebhookInstallOptions{
		Paths:            slices.Clone(c.webhookPaths),
		LocalServingHost: "127.0.0.1",
		MaxTime:          crdEstablishTimeout,
		PollInterval:     PollInterval,
	}
}

// WebhookOptions returns the options of controller-runtime's webhook server (webhook.NewServer, or
// manager.Options.WebhookServer) that serve the configurations of WithWebhooks: the host, the port and
// the directory of tls.crt and tls.key. Without WithWebhooks the port is -1, which keeps a server off
// (StartedChecker reports it healthy).
//
//	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{WebhookServer: webhook.NewServer(env.WebhookOptions())})
func (e *Env) WebhookOptions() webhook.Options {
	if e.Webhooks == nil {
		return webhook.Options{Port: -1}
	}
	return webhook.Options{
		Host:    e.Webhooks.LocalServingHost,
		Port:    e.Webhooks.LocalServingPort,
		CertDir: e.Webhooks.LocalServingCertDir,
	}
}

// WaitForWebhookServer waits until the test's webhook server answers at the address of WebhookOptions
// over TLS, with the certificate the API server trusts, and then answers an HTTP request, so that the
// API server's calls from then on reach it. Use it after starting the webhook server outside
// StartManager (an operator's main, say); StartManager waits by itself. It fails the test after
// timeout, and when the environment has no webhooks.
func (e *Env) WaitForWebhookServer(t testing.TB, timeout time.Duration) {
	t.Helper()
	if e.Webhooks == nil {
		t.Fatalf("WaitForWebhookServer: the environment has no webhooks (start it with harness.WithWebhooks)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := e.waitForWebhookServer(ctx); err != nil {
		t.Fatalf("the webhook server at %s did not answer within %s: %v", e.webhookAddress(), timeout, err)
	}
}

func (e *Env) webhookAddress() string {
	return net.JoinHostPort(e.Webhooks.LocalServingHost, strconv.Itoa(e.Webhooks.LocalServingPort))
}

// waitForWebhookServer polls until an HTTPS request to the webhook server, verified with the CA that
// the configurations carry as caBundle, gets an answer (any status: the paths are the handlers').
func (e *Env) waitForWebhookServer(ctx context.Context) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(e.Webhooks.LocalServingCAData) {
		return errors.New("the webhook CA is not a PEM certificate")
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: e.Webhooks.LocalServingHost, MinVersion: tls.VersionTLS12}}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: transport, Timeout: 5 * time.Second}
	url := "https://" + e.webhookAddress() + "/"
	var last error
	err := wait.PollUntilContextCancel(ctx, PollInterval, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			last = err
			return false, nil
		}
		resp.Body.Close()
		return true, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	return err
}

// registeringServer is a webhook server that records whether a webhook was registered with it, so that
// StartManager waits for it to answer only when it serves something.
type registeringServer struct {
	webhook.Server
	registered atomic.Bool
}

// Register implements webhook.Server.
func (s *registeringServer) Register(path string, hook http.Handler) {
	s.registered.Store(true)
	s.Server.Register(path, hook)
}

// WithWebhookServer makes the environment serve the webhooks setup registers (ctrl.NewWebhookManagedBy
// calls, a package's SetupWithManager), for its whole life, where WithWebhooks pointed the
// configurations: every create, update and conversion of the package's tests then passes through them
// without a test starting a manager of its own for it. Managers started by StartManager then serve no
// webhook (the port is the environment's); a process a test runs must not serve on WebhookOptions
// either. It needs WithWebhooks.
//
//	func TestMain(m *testing.M) {
//		harness.Main(m, harness.WithCRDPaths("../config/crd/bases"),
//			harness.WithWebhooks("../config/webhook"), harness.WithWebhookServer(webhook.SetupWithManager))
//	}
func WithWebhookServer(setup func(mgr manager.Manager) error) Option {
	return func(c *config) { c.webhookSetup = setup }
}

// serveWebhooks starts a manager that serves the webhooks of cfg's WithWebhookServer until Stop, and
// waits until its server answers.
func (e *Env) serveWebhooks(ctx context.Context, cfg *config) error {
	if cfg.webhookSetup == nil {
		return nil
	}
	if e.Webhooks == nil {
		return errors.New("WithWebhookServer needs WithWebhooks: the configurations to point at the server")
	}
	mgr, err := manager.New(e.Config, manager.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          webhook.NewServer(e.WebhookOptions()),
		Controller:             ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return fmt.Errorf("webhook server: create manager: %w", err)
	}
	if err := cfg.webhookSetup(mgr); err != nil {
		return fmt.Errorf("webhook server: set up: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	e.stopFns = append(e.stopFns, func() error {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("webhook server: %w", err)
		}
		return nil
	})
	e.servesWebhooks = true
	waitCtx, waitCancel := context.WithTimeout(ctx, webhookServeTimeout)
	defer waitCancel()
	if err := e.waitForWebhookServer(waitCtx); err != nil {
		return fmt.Errorf("webhook server at %s did not answer: %w", e.webhookAddress(), err)
	}
	return nil
}

// idleServer is the webhook server of a manager started by StartManager while the environment serves
// the webhooks itself (WithWebhookServer): registrations go to a server that is never started, so it
// serves nothing.
type idleServer struct{ webhook.Server }

// newIdleServer returns an idleServer.
func newIdleServer() idleServer { return idleServer{Server: webhook.NewServer(webhook.Options{})} }

// Start implements webhook.Server: it waits for ctx.
func (idleServer) Start(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (idleServer) NeedLeaderElection() bool { return false }

// StartedChecker implements webhook.Server: always healthy.
func (idleServer) StartedChecker() healthz.Checker { return healthz.Ping }
