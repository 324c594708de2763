package localweb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// PortVariable is the environment variable the web server listens on; the operator renders it from the
// Welcome's spec.port.
const PortVariable = "PORT"

// Build compiles the web server of the Convergo module at root (./examples/welcome/web, the program
// its image runs) into dir and returns the binary's path. It builds with the go command on PATH and the
// settings of `go test`, so that the build cache serves it.
func Build(ctx context.Context, root, dir string) (string, error) {
	bin, err := filepath.Abs(filepath.Join(dir, "welcome-web"))
	if err != nil {
		return "", fmt.Errorf("build the web server: %w", err)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/welcome/web")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the web server (go build ./examples/welcome/web in %s): %w\n%s", root, err, out)
	}
	return bin, nil
}

// Option changes how Start runs the web server.
type Option func(*settings)

type settings struct {
	port *int
	log  io.Writer
	dir  string
}

// WithPort makes the web server listen on port instead of the port the operator rendered, by setting
// PORT; 0 picks a free port.
func WithPort(port int) Option { return func(s *settings) { s.port = &port } }

// WithLog sends the web server's output (its JSON log) to w; by default it is discarded.
func WithLog(w io.Writer) Option { return func(s *settings) { s.log = w } }

// WithDir makes Start create the directory that stands in for the volumes under dir instead of the
// system's temporary directory.
func WithDir(dir string) Option { return func(s *settings) { s.dir = dir } }

// Process is a web server running as a local process. Stop it with Stop.
type Process struct {
	// URL is the page's address: http://localhost:<port><readiness probe path>.
	URL string
	// Port is the local port the server listens on, on all interfaces.
	Port int
	// Config is the configuration the server runs with, as Resolve read it.
	Config *Config
	// Rewrites describes each value of Config that the local process gets changed: a mount path
	// rewritten to its local stand-in, PORT set by WithPort. Values from Secrets are not shown.
	Rewrites []string
	// Dir holds the stand-in of each volume; Stop removes it.
	Dir string

	cmd      *exec.Cmd
	done     chan struct{} // closed when the process has exited
	waitErr  error         // the process's exit, once done is closed
	stopOnce sync.Once
	stopErr  error
}

// Start writes the files of cfg's volumes under a new directory, starts binary (built by Build) with
// cfg's arguments and exactly cfg's environment (nothing inherited), the mount paths rewritten to their
// stand-ins, and waits until the readiness probe's path answers with a success status, as the kubelet
// would, or until ctx is done.
func Start(ctx context.Context, binary string, cfg *Config, opts ...Option) (*Process, error) {
	s := settings{log: io.Discard}
	for _, o := range opts {
		o(&s)
	}
	dir, err := os.MkdirTemp(s.dir, "welcome-web-")
	if err != nil {
		return nil, fmt.Errorf("create the directory for the web server's volumes: %w", err)
	}
	p := &Process{Config: cfg, Dir: dir, done: make(chan struct{})}
	fail := func(err error) (*Process, error) {
		_ = os.RemoveAll(dir)
		return nil, err
	}

	// Stand-ins for the mounts, longest mount path first, so that a nested mount wins when rewriting.
	stand := map[string]string{}
	for i, m := range cfg.Mounts {
		d := filepath.Join(dir, fmt.Sprintf("%d-%s", i, m.Volume))
		if err := writeFiles(d, m); err != nil {
			return fail(err)
		}
		stand[m.Path] = d
	}
	mountPaths := make([]string, 0, len(stand))
	for mp := range stand {
		mountPaths = append(mountPaths, mp)
	}
	slices.SortFunc(mountPaths, func(a, b string) int { return len(b) - len(a) })
	rewrite := func(v string) (string, bool) {
		if !path.IsAbs(v) {
			return v, false
		}
		cv := path.Clean(v)
		for _, mp := range mountPaths {
			if cv == mp {
				return stand[mp], true
			}
			if rest, ok := strings.CutPrefix(cv, strings.TrimSuffix(mp, "/")+"/"); ok {
				return filepath.Join(stand[mp], filepath.FromSlash(rest)), true
			}
		}
		return v, false
	}

	env := make([]string, 0, len(cfg.Env)+1)
	port := ""
	for _, e := range cfg.Env {
		v := e.Value
		if nv, ok := rewrite(v); ok {
			if e.Secret {
				p.Rewrites = append(p.Rewrites, fmt.Sprintf("%s (from %s, not shown): a mount path, rewritten to its local stand-in", e.Name, e.From))
			} else {
				p.Rewrites = append(p.Rewrites, fmt.Sprintf("%s=%s -> %s", e.Name, v, nv))
			}
			v = nv
		}
		if e.Name == PortVariable {
			port = v
			continue
		}
		env = append(env, e.Name+"="+v)
	}
	args := make([]string, 0, len(cfg.Args))
	for _, a := range cfg.Args {
		if na, ok := rewrite(a); ok {
			p.Rewrites = append(p.Rewrites, fmt.Sprintf("argument %s -> %s", a, na))
			a = na
		}
		args = append(args, a)
	}
	if s.port != nil {
		want := *s.port
		if want == 0 {
			if want, err = freePort(); err != nil {
				return fail(err)
			}
		}
		p.Rewrites = append(p.Rewrites, fmt.Sprintf("%s=%s -> %d (the local port)", PortVariable, port, want))
		port = strconv.Itoa(want)
	}
	if port == "" {
		return fail(fmt.Errorf("container %q of deployment %s sets no %s: choose the local port with WithPort", cfg.Container, cfg.Deployment, PortVariable))
	}
	if p.Port, err = strconv.Atoi(port); err != nil {
		return fail(fmt.Errorf("%s=%q is not a port number", PortVariable, port))
	}
	env = append(env, PortVariable+"="+port)
	// The port must be free: otherwise the readiness probe might reach another server.
	ln, err := net.Listen("tcp", net.JoinHostPort("", port))
	if err != nil {
		return fail(fmt.Errorf("port %s is in use on this machine (%w): choose another local port (WithPort; the demo's --page-port)", port, err))
	}
	_ = ln.Close()

	p.cmd = exec.Command(binary, args...)
	p.cmd.Env = env
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = s.log, s.log
	if err := p.cmd.Start(); err != nil {
		return fail(fmt.Errorf("start the web server %s: %w", binary, err))
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()

	p.URL = "http://localhost:" + port + cfg.ReadinessPath
	if err := p.waitReady(ctx, "http://127.0.0.1:"+port+cfg.ReadinessPath); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

// writeFiles writes the files of m under d with their modes.
func writeFiles(d string, m Mount) error {
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("create the stand-in of volume %s: %w", m.Volume, err)
	}
	for rel, data := range m.Files {
		f := filepath.Join(d, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return fmt.Errorf("create the stand-in of volume %s: %w", m.Volume, err)
		}
		mode := fs.FileMode(0o644)
		if md, ok := m.Mode[rel]; ok {
			mode = fs.FileMode(md) & fs.ModePerm
		}
		if err := os.WriteFile(f, data, mode); err != nil {
			return fmt.Errorf("write %s of volume %s: %w", rel, m.Volume, err)
		}
	}
	return nil
}

// freePort returns a TCP port that is free on all interfaces now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		return 0, fmt.Errorf("find a free local port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls probe until it answers 200-399, the process exits or ctx is done.
func (p *Process) waitReady(ctx context.Context, probe string) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, probe, nil)
		if err != nil {
			return fmt.Errorf("readiness probe %s: %w", probe, err)
		}
		if resp, err := hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode >= 200 && resp.StatusCode < 400 {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("the web server exited before answering its readiness probe %s (%v): see its log", probe, p.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("wait for the web server's readiness probe %s: %w", probe, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop ends the web server with SIGTERM (SIGKILL if it has not stopped 15 seconds later), waits for it
// and removes its directory. It returns an error when the server had failed before or did not stop
// cleanly (a server that had stopped by itself with exit status 0, on its own SIGINT, is no error).
// Calling it again returns the same.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() {
		defer os.RemoveAll(p.Dir)
		select {
		case <-p.done:
			if p.waitErr != nil {
				p.stopErr = fmt.Errorf("the web server had exited before it was stopped: %w", p.waitErr)
			}
			return
		default:
		}
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			p.stopErr = fmt.Errorf("stop the web server: %w", err)
		}
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if p.waitErr != nil && p.stopErr == nil {
			p.stopErr = fmt.Errorf("the web server did not stop cleanly: %w", p.waitErr)
		}
	})
	return p.stopErr
}
