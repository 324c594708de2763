package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// notFound is the failure message when the server binaries cannot be found.
const notFound = "PostgreSQL server binaries (initdb, pg_ctl) not found: " +
	"install Debian's postgresql package (apt-get install -y postgresql) or put them on PATH"

const (
	// host is the only address the server listens on.
	host = "127.0.0.1"
	// pgCtlTimeout is how long, in seconds, pg_ctl waits for the server to start or stop.
	pgCtlTimeout = "60"
	// commandTimeout bounds each run of initdb or pg_ctl, beyond pg_ctl's own timeout.
	commandTimeout = 3 * time.Minute
	// portAttempts is how often the first start tries a fresh port when the chosen one was
	// taken between picking and binding it.
	portAttempts = 3
	// logTailLines is how many lines of the server log go into failure messages.
	logTailLines = 30
)

// Option configures New and Start.
type Option func(*config)

type config struct {
	logOutput io.Writer
	binDir    string
}

// WithLogOutput copies the output of initdb and pg_ctl to w as each command finishes, and the
// server's log each time the server stops (by Stop, or by Close and so when the test ends). Without
// it, the tail of the server log is reported only when starting fails or the test has failed.
func WithLogOutput(w io.Writer) Option {
	return func(c *config) { c.logOutput = w }
}

// WithBinDir sets the directory holding initdb and pg_ctl, instead of looking them up on PATH and
// in /usr/lib/postgresql/*/bin.
func WithBinDir(dir string) Option {
	return func(c *config) { c.binDir = dir }
}

// Server is a PostgreSQL server started by New or Start. Host, Port, URL and DataDir never change;
// Stop, Start and Close take turns, each waiting for the one under way.
type Server struct {
	cfg     config
	binDir  string // the directory of initdb, with psql and pg_isready next to it in a full install
	initdb  string
	pgCtl   string
	cred    *syscall.Credential // the user to run as when the test runs as root; nil otherwise
	env     []string
	baseDir string
	dataDir string
	sockDir string
	logFile string
	port    int

	mu        sync.Mutex
	running   bool
	closed    bool
	logCopied int64 // how much of logFile has been copied to cfg.logOutput
}

// New starts a fresh PostgreSQL server, for programs that are not tests (a demo, a local
// development setup): it makes a data directory with initdb and starts the server with pg_ctl on
// 127.0.0.1 and a free port, and returns once the server accepts connections. The caller must Close
// the server, which stops it and removes its files.
//
// ctx bounds the start (initdb and pg_ctl); once New has returned, the server runs until Close,
// whatever becomes of ctx. New fails if the server binaries cannot be found (the error says what to
// install) or the server does not start; it leaves nothing behind then.
func New(ctx context.Context, opts ...Option) (*Server, error) {
	s := &Server{}
	for _, opt := range opts {
		opt(&s.cfg)
	}
	var err error
	if s.initdb, s.pgCtl, err = findBinaries(s.cfg.binDir); err != nil {
		return nil, err
	}
	s.binDir = filepath.Dir(s.initdb)
	if resolved, err := filepath.EvalSymlinks(s.initdb); err == nil {
		s.binDir = filepath.Dir(resolved)
	}
	if os.Geteuid() == 0 {
		if s.cred, err = unprivilegedUser(); err != nil {
			return nil, err
		}
	}
	s.env = environ()

	// Not t.TempDir for Start's tests: the testing package makes it 0700, which the unprivileged
	// user could not traverse when running as root.
	if s.baseDir, err = os.MkdirTemp("", "convergo-pg-"); err != nil {
		return nil, fmt.Errorf("create a directory for PostgreSQL: %w", err)
	}
	if err := s.init(ctx); err != nil {
		if err2 := s.Close(); err2 != nil {
			err = fmt.Errorf("%w; then: %w", err, err2)
		}
		return nil, err
	}
	return s, nil
}

// init makes the data directory and starts the server.
func (s *Server) init(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.prepareDirs(); err != nil {
		return err
	}
	if err := s.run(ctx, s.initdb, "-D", s.dataDir, "-U", "postgres",
		"--auth-local=trust", "--auth-host=trust", "--encoding=UTF8", "--locale=C", "--no-sync"); err != nil {
		return err
	}
	if err := s.writeHBA(); err != nil {
		return err
	}

	// The port is free when picked but may be taken before the server binds it, by another test
	// process doing the same: then try another.
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		s.port = port
		err = s.start(ctx)
		if err == nil || attempt == portAttempts || !strings.Contains(err.Error(), "Address already in use") {
			return err
		}
	}
}

// Start starts a fresh PostgreSQL server for the test, as New does, and registers a cleanup with t
// that closes it (stops the server and removes its files). Start fails the test if the server
// binaries cannot be found or the server does not start.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := New(t.Context(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := s.close(func() {
			if t.Failed() && s.cfg.logOutput == nil && s.logSize() > 0 {
				t.Logf("PostgreSQL server log (%s):\n%s", s.logFile, s.logTail(0))
			}
		})
		if err != nil {
			t.Error(err)
		}
	})
	return s
}

// Host returns the address the server listens on, 127.0.0.1.
func (s *Server) Host() string { return host }

// Port returns the TCP port the server listens on. It stays the same across Stop and Start.
func (s *Server) Port() int { return s.port }

// URL returns a connection URL for the superuser postgres and the database postgres:
// postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable.
func (s *Server) URL() string {
	return "postgres://postgres@" + net.JoinHostPort(host, strconv.Itoa(s.port)) + "/postgres?sslmode=disable"
}

// DataDir returns the server's data directory. When the test runs as root, it belongs to the
// unprivileged user the server runs as.
func (s *Server) DataDir() string { return s.dataDir }

// LogFile returns the path of the server's log, to which the server appends as it runs (pg_ctl -l);
// read it, for example, to see the statements that log_statement logs. Close removes it (after copying
// it to WithLogOutput's writer, if any).
func (s *Server) LogFile() string { return s.logFile }

// Stop stops the server (pg_ctl stop -m fast: open connections are closed, the data stays) and
// returns once it has exited, for example to test how code copes with an outage. It fails the test
// if the server is not running or does not stop.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		t.Fatal("stop PostgreSQL: the server is not running")
	}
	if err := s.stop("fast"); err != nil {
		t.Fatal(err)
	}
}

// Start starts the server again after Stop, with the same data directory and port, and returns once
// it accepts connections. It fails the test if the server is running or does not start (for
// example, when something else has taken the port meanwhile) or has been closed.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		t.Fatal("start PostgreSQL: the server has been closed")
	case s.running:
		t.Fatal("start PostgreSQL: the server is already running")
	}
	if err := s.start(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// Close stops the server if it runs (pg_ctl stop -m fast; if that fails, -m immediate) and removes
// its files: the data directory, the socket directory and the server log. Calling it again does
// nothing and returns nil. Start's cleanup calls it when the test ends.
func (s *Server) Close() error {
	return s.close(nil)
}

// close is Close, calling beforeRemove (if not nil) once the server has stopped, before its files are
// removed.
func (s *Server) close(beforeRemove func()) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	// postmaster.pid exists while a server runs on the data directory, even one whose start
	// pg_ctl gave up waiting for.
	if _, err := os.Stat(filepath.Join(s.dataDir, "postmaster.pid")); s.running || err == nil {
		if err := s.stop("fast"); err != nil {
			if err2 := s.stop("immediate"); err2 != nil {
				errs = append(errs, fmt.Errorf("%w; then: %w", err, err2))
			}
		}
	}
	if beforeRemove != nil {
		beforeRemove()
	}
	if err := os.RemoveAll(s.baseDir); err != nil {
		errs = append(errs, fmt.Errorf("remove PostgreSQL's files: %w", err))
	}
	return errors.Join(errs...)
}

// start starts the server with pg_ctl, which waits until it accepts connections.
func (s *Server) start(ctx context.Context) error {
	from := s.logSize()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=%s -c fsync=off", s.port, shellQuote(s.sockDir), host)
	err := s.run(ctx, s.pgCtl, "start", "-w", "-t", pgCtlTimeout, "-D", s.dataDir, "-l", s.logFile, "-o", opts)
	if err != nil {
		return fmt.Errorf("start PostgreSQL on port %d: %w\nserver log:\n%s", s.port, err, s.logTail(from))
	}
	s.running = true
	return nil
}

// stop stops the server with pg_ctl in the given shutdown mode and copies its log to the log output.
func (s *Server) stop(mode string) error {
	err := s.run(context.Background(), s.pgCtl, "stop", "-w", "-t", pgCtlTimeout, "-m", mode, "-D", s.dataDir)
	s.copyLog()
	if err != nil {
		return fmt.Errorf("stop PostgreSQL (%s): %w", mode, err)
	}
	s.running = false
	return nil
}

// hba is the server's pg_hba.conf: the superuser postgres is trusted (on the Unix socket and on
// loopback), every other role must give its password (SCRAM), so that credentials under test are
// really checked.
const hba = `local all all trust
host all postgres 127.0.0.1/32 trust
host all all 127.0.0.1/32 scram-sha-256
`

// writeHBA replaces the pg_hba.conf initdb wrote.
func (s *Server) writeHBA() error {
	p := filepath.Join(s.dataDir, "pg_hba.conf")
	if err := os.WriteFile(p, []byte(hba), 0o600); err != nil {
		return fmt.Errorf("write pg_hba.conf: %w", err)
	}
	if s.cred != nil {
		if err := os.Chown(p, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return fmt.Errorf("hand pg_hba.conf over to uid %d: %w", s.cred.Uid, err)
		}
	}
	return nil
}

// prepareDirs makes the directories for data and sockets and the log file, owned by the user the
// server will run as.
func (s *Server) prepareDirs() error {
	s.dataDir = filepath.Join(s.baseDir, "data")
	s.sockDir = filepath.Join(s.baseDir, "sock")
	s.logFile = filepath.Join(s.baseDir, "server.log")
	if err := os.Chmod(s.baseDir, 0o755); err != nil {
		return fmt.Errorf("prepare PostgreSQL's directory: %w", err)
	}
	if err := os.Mkdir(s.dataDir, 0o700); err != nil {
		return fmt.Errorf("prepare PostgreSQL's data directory: %w", err)
	}
	if err := os.Mkdir(s.sockDir, 0o755); err != nil {
		return fmt.Errorf("prepare PostgreSQL's socket directory: %w", err)
	}
	if err := os.WriteFile(s.logFile, nil, 0o644); err != nil {
		return fmt.Errorf("prepare PostgreSQL's log file: %w", err)
	}
	if s.cred == nil {
		return nil
	}
	for _, p := range []string{s.dataDir, s.sockDir, s.logFile} {
		if err := os.Chown(p, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return fmt.Errorf("hand %s over to uid %d: %w", p, s.cred.Uid, err)
		}
	}
	return nil
}

// run runs a PostgreSQL program, as the unprivileged user when running as root, and returns an
// error with the program's output if it fails. ctx and commandTimeout bound it.
func (s *Server) run(ctx context.Context, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = s.baseDir // a directory the unprivileged user can enter
	cmd.Env = s.env
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.WaitDelay = 10 * time.Second
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	err := cmd.Run()
	if w := s.cfg.logOutput; w != nil {
		fmt.Fprintf(w, "$ %s %s\n%s", filepath.Base(name), strings.Join(args, " "), out.String())
	}
	if err != nil {
		what := filepath.Base(name)
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			what += " " + args[0]
		}
		return fmt.Errorf("%s: %w\n%s", what, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// logSize returns the current size of the server log.
func (s *Server) logSize() int64 {
	fi, err := os.Stat(s.logFile)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logTail returns the last lines of the server log written after offset from.
func (s *Server) logTail(from int64) string {
	data, err := os.ReadFile(s.logFile)
	if err != nil {
		return fmt.Sprintf("(read the server log: %v)", err)
	}
	if from > int64(len(data)) {
		from = 0
	}
	lines := strings.Split(strings.TrimRight(string(data[from:]), "\n"), "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return strings.Join(lines, "\n")
}

// copyLog copies what the server has logged since the last copy to the log output, if any.
func (s *Server) copyLog() {
	w := s.cfg.logOutput
	if w == nil {
		return
	}
	f, err := os.Open(s.logFile)
	if err != nil {
		fmt.Fprintf(w, "(open the PostgreSQL server log: %v)\n", err)
		return
	}
	defer f.Close()
	if _, err := f.Seek(s.logCopied, io.SeekStart); err != nil {
		fmt.Fprintf(w, "(read the PostgreSQL server log: %v)\n", err)
		return
	}
	n, err := io.Copy(w, f)
	s.logCopied += n
	if err != nil {
		fmt.Fprintf(w, "(copy the PostgreSQL server log: %v)\n", err)
	}
}

// findBinaries returns the paths of initdb and pg_ctl: from dir if it is given, else from PATH,
// else from the highest version in /usr/lib/postgresql/*/bin.
func findBinaries(dir string) (initdb, pgCtl string, err error) {
	if dir != "" {
		initdb, pgCtl = filepath.Join(dir, "initdb"), filepath.Join(dir, "pg_ctl")
		if isExecutable(initdb) && isExecutable(pgCtl) {
			return initdb, pgCtl, nil
		}
		return "", "", fmt.Errorf("%s (looked in %s)", notFound, dir)
	}
	initdb, err1 := exec.LookPath("initdb")
	pgCtl, err2 := exec.LookPath("pg_ctl")
	if err1 == nil && err2 == nil {
		return initdb, pgCtl, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(d string) float64 {
		v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(d)), 64)
		if err != nil {
			return -1
		}
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int {
		va, vb := version(a), version(b)
		switch {
		case va > vb:
			return -1
		case va < vb:
			return 1
		}
		return 0
	})
	for _, d := range dirs {
		initdb, pgCtl = filepath.Join(d, "initdb"), filepath.Join(d, "pg_ctl")
		if isExecutable(initdb) && isExecutable(pgCtl) {
			return initdb, pgCtl, nil
		}
	}
	return "", "", errors.New(notFound)
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// unprivilegedUser returns the credentials to run PostgreSQL with when the test runs as root: the
// postgres system user's if it exists, else nobody's.
func unprivilegedUser() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err := strconv.ParseUint(u.Uid, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("parse the uid of user %s: %w", name, err)
		}
		gid, err := strconv.ParseUint(u.Gid, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("parse the gid of user %s: %w", name, err)
		}
		cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
		if ids, err := u.GroupIds(); err == nil {
			for _, id := range ids {
				if g, err := strconv.ParseUint(id, 10, 32); err == nil {
					cred.Groups = append(cred.Groups, uint32(g))
				}
			}
		}
		return cred, nil
	}
	return nil, errors.New("PostgreSQL refuses to run as root, and there is neither a postgres nor a nobody user to run it as")
}

// environ returns the environment for PostgreSQL's programs: the test's, without PG* variables
// (PGDATA, PGPORT, PGOPTIONS and the like), which would otherwise change what they do.
func environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return env
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("pick a free port on %s: %w", host, err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("release the picked port %d: %w", port, err)
	}
	return port, nil
}

// shellQuote quotes s for /bin/sh, through which pg_ctl passes its -o options to the server.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
