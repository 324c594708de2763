package jaeger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/convergo-dev/convergo/testing/assets"
	"github.com/convergo-dev/convergo/testing/internal/freeport"
)

const (
	host         = "127.0.0.1"
	startTimeout = 2 * time.Minute // a cold 120 MB binary on a loaded machine starts slowly
	stopTimeout  = 30 * time.Second
	portAttempts = 3
)

// Option configures New and Start.
type Option func(*config)

type config struct {
	binDir    string
	logOutput io.Writer
}

// WithBinDir takes the jaeger binary from dir instead of testing/assets (which builds it from the Go
// module proxy on first use, several minutes, and caches it).
func WithBinDir(dir string) Option {
	return func(c *config) { c.binDir = dir }
}

// WithLogOutput copies Jaeger's log to w when it stops. By default Start shows it only when the
// test failed.
func WithLogOutput(w io.Writer) Option {
	return func(c *config) { c.logOutput = w }
}

// Server is a Jaeger started by New or Start.
type Server struct {
	cfg      config
	bin      string
	dir      string
	logFile  string
	otlpPort int
	httpPort int
	grpcPort int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // what Wait returned; read once exited is closed
}

// New starts a Jaeger that keeps traces in memory, for programs that are not tests, and returns once
// it receives spans and answers queries. The caller must Close it. ctx bounds the start (and, on a
// machine that never built jaeger, its build).
func New(ctx context.Context, opts ...Option) (*Server, error) {
	s := &Server{}
	for _, o := range opts {
		o(&s.cfg)
	}
	binDir := s.cfg.binDir
	if binDir == "" {
		var err error
		if binDir, err = assets.Ensure(ctx, assets.WithComponents(assets.Jaeger)); err != nil {
			return nil, fmt.Errorf("find or build jaeger: %w", err)
		}
	}
	s.bin = filepath.Join(binDir, string(assets.Jaeger))
	var err error
	if s.dir, err = os.MkdirTemp("", "convergo-jaeger-"); err != nil {
		return nil, fmt.Errorf("create a directory for jaeger: %w", err)
	}
	s.logFile = filepath.Join(s.dir, "jaeger.log")
	// The ports are free when picked but may be taken before jaeger binds them: then try others.
	for attempt := 1; ; attempt++ {
		err = s.start(ctx)
		if err == nil {
			return s, nil
		}
		if attempt == portAttempts || !strings.Contains(err.Error(), "address already in use") {
			_ = os.RemoveAll(s.dir)
			return nil, err
		}
	}
}

// Start starts a Jaeger for the test, as New does, and closes it when the test ends, showing its
// log if the test failed. It fails the test if jaeger cannot be built or does not start.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := New(t.Context(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() && s.cfg.logOutput == nil {
			if data, err := os.ReadFile(s.logFile); err == nil && len(data) > 0 {
				t.Logf("jaeger log (%s):\n%s", s.logFile, tail(string(data), 40))
			}
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// OTLPEndpoint returns the host:port where Jaeger receives OTLP over HTTP (plain text), for
// otlptracehttp.WithEndpoint with otlptracehttp.WithInsecure.
func (s *Server) OTLPEndpoint() string { return net.JoinHostPort(host, strconv.Itoa(s.otlpPort)) }

// QueryURL returns the base URL of Jaeger's query API, http://127.0.0.1:PORT.
func (s *Server) QueryURL() string {
	return "http://" + net.JoinHostPort(host, strconv.Itoa(s.httpPort))
}

// Close stops Jaeger (its traces are lost) and removes its files.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	err := s.stop()
	if s.cfg.logOutput != nil {
		if data, rerr := os.ReadFile(s.logFile); rerr == nil {
			_, _ = s.cfg.logOutput.Write(data)
		}
	}
	if rerr := os.RemoveAll(s.dir); rerr != nil && err == nil {
		err = fmt.Errorf("remove jaeger's files: %w", rerr)
	}
	return err
}

// start picks ports, writes the configuration and starts jaeger, and waits until it is ready. A start
// that fails leaves no process behind.
func (s *Server) start(ctx context.Context) error {
	for _, p := range []*int{&s.otlpPort, &s.httpPort, &s.grpcPort} {
		port, err := freeport.On(host)
		if err != nil {
			return err
		}
		*p = port
	}
	cfgFile := filepath.Join(s.dir, "config.yaml")
	if err := os.WriteFile(cfgFile, []byte(configYAML(s.otlpPort, s.httpPort, s.grpcPort)), 0o644); err != nil {
		return fmt.Errorf("write jaeger's configuration: %w", err)
	}
	logf, err := os.Create(s.logFile)
	if err != nil {
		return fmt.Errorf("create jaeger's log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(s.bin, "--config", "file:"+cfgFile)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	// Detached from the terminal: a Ctrl-C reaches the test or demo, which stops jaeger itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start jaeger: %w", err)
	}
	s.mu.Lock()
	s.cmd, s.exited = cmd, make(chan struct{})
	s.mu.Unlock()
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(ctx); err != nil {
		s.mu.Lock()
		_ = s.stop()
		s.mu.Unlock()
		data, _ := os.ReadFile(s.logFile)
		return fmt.Errorf("start jaeger: %w\njaeger log:\n%s", err, tail(string(data), 20))
	}
	return nil
}

// waitReady waits until the query API answers and the OTLP receiver accepts connections.
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.ready(ctx) {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("jaeger exited: %v", s.err)
		case <-ctx.Done():
			return fmt.Errorf("jaeger did not answer at %s: %w", s.QueryURL(), context.Cause(ctx))
		case <-tick.C:
		}
	}
}

func (s *Server) ready(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.QueryURL()+"/api/services", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", s.OTLPEndpoint())
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// stop sends SIGTERM (jaeger shuts down cleanly), then SIGKILL if it has not exited in time. s.mu is
// held.
func (s *Server) stop() error {
	if s.cmd == nil {
		return nil
	}
	defer func() { s.cmd = nil }()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop jaeger: %w", err)
	}
	select {
	case <-s.exited:
		return nil
	case <-time.After(stopTimeout):
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	return fmt.Errorf("stop jaeger: it had not exited %s after SIGTERM and was killed", stopTimeout)
}

// configYAML is jaeger's configuration: OTLP over HTTP in, memory storage, the query API, every
// listener on 127.0.0.1 and the given ports, and no telemetry of its own (whose fixed port would
// clash between two Jaegers).
func configYAML(otlpPort, httpPort, grpcPort int) string {
	return fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: %[1]s:%[3]d
    grpc:
      endpoint: %[1]s:%[4]d
receivers:
  otlp:
    protocols:
      http:
        endpoint: %[1]s:%[2]d
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`, host, otlpPort, httpPort, grpcPort)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
