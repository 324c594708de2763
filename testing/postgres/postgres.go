package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/convergo-dev/convergo/testing/internal/freeport"
)

// notFound is the failure message when the server binaries cannot be found.
const notFound = "PostgreSQL server binaries (initdb, postgres) not found: " +
	"install Debian's postgresql package (apt-get install -y postgresql) or put them on PATH"

const (
	// host is the only address the server listens on.
	host = "127.0.0.1"
	// startTimeout bounds how long a start waits for the server to accept connections (crash
	// recovery included), and stopTimeout how long a stop waits for it to exit.
	startTimeout = time.Minute
	stopTimeout  = time.Minute
	// commandTimeout bounds each run of initdb.
	commandTimeout = 3 * time.Minute
	// portAttempts is how often the first start tries a fresh port when the chosen one was
	// taken between picking and binding it.
	portAttempts = 3
	// logTailLines is how many lines of the server log go into failure messages.
	logTailLines = 30
	// logLinePrefix starts each entry of the server log: time, process ID, and for a client's
	// backend its user and database. Statements parses it.
	logLinePrefix = "%m [%p] %q%u@%d "
)

// Option configures New and Start.
type Option func(*config)

type config struct {
	logOutput io.Writer
	binDir    string
	settings  []setting
}

// setting is a server setting, written into postgresql.conf.
type setting struct{ name, value string }

// defaultSettings are the settings the server runs with unless WithSetting changes them: no fsync,
// since nothing is meant to survive the test, and every statement in the log, for Statements.
var defaultSettings = []setting{{"fsync", "off"}, {"log_statement", "all"}}

// fixedSettings are the settings the package sets itself on every start, which WithSetting refuses:
// where the server listens, and where and how it logs (Statements reads the log).
var fixedSettings = []string{"port", "listen_addresses", "unix_socket_directories", "data_directory",
	"logging_collector", "log_destination", "log_line_prefix", "lc_messages"}

// WithLogOutput copies the output of initdb to w as it finishes, and the server's log each time the
// server stops (by Stop, Kill, or Close and so when the test ends). Without it, the tail of the
// server log is reported only when starting fails or the test has failed.
func WithLogOutput(w io.Writer) Option {
	return func(c *config) { c.logOutput = w }
}

// WithBinDir sets the directory holding initdb and postgres, instead of looking them up on PATH and
// in /usr/lib/postgresql/*/bin.
func WithBinDir(dir string) Option {
	return func(c *config) { c.binDir = dir }
}

// WithSetting runs the server with the setting name (a postgresql.conf parameter, such as work_mem
// or max_connections) set to value, written into the server's postgresql.conf, so that ALTER SYSTEM
// and pg_reload_conf() change it at run time as on any server. Later settings win over
// earlier ones and over the package's defaults, fsync=off and log_statement=all (with another
// log_statement, Statements returns only what it logs). New fails for an empty name or one holding
// "=", and for the settings the package sets itself: port, listen_addresses,
// unix_socket_directories, data_directory, logging_collector, log_destination, log_line_prefix and
// lc_messages. The server checks the rest: a start with an unknown setting or a bad value fails with
// the server's message.
func WithSetting(name, value string) Option {
	return func(c *config) { c.settings = append(c.settings, setting{name, value}) }
}

// checkSettings reports a setting WithSetting may not set.
func checkSettings(settings []setting) error {
	for _, st := range settings {
		switch {
		case st.name == "" || strings.ContainsAny(st.name, "= \t\n"):
			return fmt.Errorf("postgres: setting %q: not a parameter name", st.name)
		case slices.Contains(fixedSettings, strings.ToLower(st.name)):
			return fmt.Errorf("postgres: setting %s is the package's own and cannot be changed", st.name)
		case strings.ContainsRune(st.value, 0):
			return fmt.Errorf("postgres: setting %s: the value holds a NUL byte", st.name)
		}
	}
	return nil
}

// Server is a PostgreSQL server started by New or Start. Host, Port, URL and DataDir never change;
// Stop, Kill, Start and Close take turns, each waiting for the one under way.
//
// The server's postmaster is a child of this process, started without pg_ctl, so that Kill can reap
// it and Start can tell a crashed server from a running one.
type Server struct {
	cfg      config
	binDir   string // the directory of initdb, with postgres, psql and pg_isready next to it
	initdb   string
	postgres string
	cred     *syscall.Credential // the user to run as when the test runs as root; nil otherwise
	env      []string
	baseDir  string
	dataDir  string
	sockDir  string
	logFile  string
	port     int

	mu        sync.Mutex
	pm        *postmaster // the server's last run: nil once stopped, killed or closed, or once a crash is cleaned up
	killedPID int         // the process ID of the last postmaster that died without a clean stop, until the next start
	closed    bool
	logCopied int64 // how much of logFile has been copied to cfg.logOutput
}

// New starts a fresh PostgreSQL server, for programs that are not tests (a demo, a local
// development setup): it makes a data directory with initdb and starts the server on 127.0.0.1 and
// a free port, and returns once the server accepts connections. The caller must Close the server,
// which stops it and removes its files.
//
// ctx bounds the start (initdb and the server's start); once New has returned, the server runs until
// Close, whatever becomes of ctx. New fails if the server binaries cannot be found (the error says
// what to install), an option is invalid, or the server does not start; it leaves nothing behind
// then.
func New(ctx context.Context, opts ...Option) (*Server, error) {
	s := &Server{}
	for _, opt := range opts {
		opt(&s.cfg)
	}
	if err := checkSettings(s.cfg.settings); err != nil {
		return nil, err
	}
	var err error
	if s.initdb, s.postgres, err = findBinaries(s.cfg.binDir); err != nil {
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
	if err := s.writeSettings(); err != nil {
		return err
	}

	// The port is free when picked but may be taken before the server binds it, by another test
	// process doing the same: then try another.
	for attempt := 1; ; attempt++ {
		port, err := freeport.On(host)
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
// binaries cannot be found, an option is invalid, or the server does not start.
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

// Port returns the TCP port the server listens on. It stays the same across Stop, Kill and Start.
func (s *Server) Port() int { return s.port }

// URL returns a connection URL for the superuser postgres and the database postgres:
// postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable.
func (s *Server) URL() string {
	return "postgres://postgres@" + net.JoinHostPort(host, strconv.Itoa(s.port)) + "/postgres?sslmode=disable"
}

// DataDir returns the server's data directory. When the test runs as root, it belongs to the
// unprivileged user the server runs as.
func (s *Server) DataDir() string { return s.dataDir }

// LogFile returns the path of the server's log, to which the server appends as it runs, across
// restarts; Statements parses it. Close removes it (after copying it to WithLogOutput's writer, if
// any).
func (s *Server) LogFile() string { return s.logFile }

// Stop stops the server (a fast shutdown: open connections are closed, the data stays) and returns
// once it has exited, for example to test how code copes with an outage. It fails the test if the
// server is not running or does not stop.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.requireRunning("stop"); err != nil {
		t.Fatal(err)
	}
	if err := s.stop(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
}

// Kill crashes the server: it sends SIGKILL to the postmaster and to every server process (backends,
// checkpointer, WAL writer...), as the OOM killer or a power cut would, reaps the postmaster and
// returns once none of them runs. Nothing is flushed or shut down: the data directory is left as a
// crash leaves it, postmaster.pid included, and the next Start recovers it from the WAL (committed
// data survives; with the default fsync=off that holds for a process crash like this one, not for a
// machine's). Open connections break. Kill fails the test if the server is not running or a process
// does not die.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.requireRunning("kill"); err != nil {
		t.Fatal(err)
	}
	if err := s.kill(); err != nil {
		t.Fatal(err)
	}
}

// Start starts the server again after Stop or Kill (or after its postmaster died otherwise: killed
// from outside the test, or crashed), with the same data directory, port and settings, and returns
// once it accepts connections, after crash recovery if it did not stop cleanly. It
// fails the test if the server is running, has been closed, or does not start (for example, when
// something else has taken the port meanwhile).
func (s *Server) Start(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		t.Fatal("start PostgreSQL: the server has been closed")
	case s.pm != nil && s.pm.alive():
		t.Fatal("start PostgreSQL: the server is already running")
	case s.pm != nil: // it died without Stop or Kill: killed from outside, or crashed
		if err := s.cleanUpCrash(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.start(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// requireRunning returns an error naming op unless the server runs.
func (s *Server) requireRunning(op string) error {
	switch {
	case s.closed:
		return fmt.Errorf("%s PostgreSQL: the server has been closed", op)
	case s.pm == nil:
		return fmt.Errorf("%s PostgreSQL: the server is not running", op)
	case !s.pm.alive():
		return fmt.Errorf("%s PostgreSQL: the server exited by itself (%v); server log:\n%s", op, s.pm.err, s.logTail(0))
	}
	return nil
}

// Close stops the server if it runs (a fast shutdown; if that fails, an immediate one, then
// SIGKILL) and removes its files: the data directory, the socket directory and the server log.
// Calling it again does nothing and returns nil. Start's cleanup calls it when the test ends.
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
	if s.pm != nil && !s.pm.alive() { // it died without Stop or Kill: its processes may be left
		if err := s.cleanUpCrash(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.pm != nil {
		if err := s.stop(syscall.SIGINT); err != nil {
			if err2 := s.stop(syscall.SIGQUIT); err2 != nil {
				if err3 := s.kill(); err3 != nil {
					errs = append(errs, fmt.Errorf("%w; then: %w; then: %w", err, err2, err3))
				}
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

// serverArgs returns the postgres command's arguments: the data directory and the package's own
// settings. Given on the command line, these are the ones ALTER SYSTEM cannot change.
func (s *Server) serverArgs() []string {
	args := []string{"-D", s.dataDir,
		"-c", "port=" + strconv.Itoa(s.port),
		"-c", "listen_addresses=" + host,
		"-c", "unix_socket_directories=" + s.sockDir,
		"-c", "logging_collector=off",
		"-c", "log_destination=stderr",
		"-c", "log_line_prefix=" + logLinePrefix,
		"-c", "lc_messages=C",
	}
	return args
}

// settingsConf returns the lines writeSettings appends to postgresql.conf: the defaults, then
// WithSetting's, so that later ones win (the server keeps a parameter's last line).
func (s *Server) settingsConf() string {
	var b strings.Builder
	b.WriteString("\n# testing/postgres: the package's defaults, then WithSetting's; the last line of a name wins\n")
	for _, st := range slices.Concat(defaultSettings, s.cfg.settings) {
		fmt.Fprintf(&b, "%s = '%s'\n", st.name, confQuote.Replace(st.value))
	}
	return b.String()
}

// confQuote escapes a value for a quoted string of postgresql.conf.
var confQuote = strings.NewReplacer(`\`, `\\`, "'", "''", "\n", `\n`)

// writeSettings appends the server's settings to the postgresql.conf initdb wrote.
func (s *Server) writeSettings() error {
	p := filepath.Join(s.dataDir, "postgresql.conf")
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("write the settings into postgresql.conf: %w", err)
	}
	if _, err := f.WriteString(s.settingsConf()); err != nil {
		f.Close()
		return fmt.Errorf("write the settings into postgresql.conf: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write the settings into postgresql.conf: %w", err)
	}
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
