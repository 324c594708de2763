package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// postmaster is one run of the server's main process.
type postmaster struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has exited and been reaped
	err    error         // what Wait returned; read only after exited is closed
}

// alive reports whether the postmaster has not exited.
func (p *postmaster) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// start starts the postmaster, its output appended to the log, and waits until it accepts
// connections. A start that fails leaves no process behind.
func (s *Server) start(ctx context.Context) error {
	from := s.logSize()
	fail := func(err error) error {
		return fmt.Errorf("start PostgreSQL on port %d: %w\nserver log:\n%s", s.port, err, s.logTail(from))
	}
	if err := s.removeStaleLocks(); err != nil {
		return fail(err)
	}
	logf, err := os.OpenFile(s.logFile, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fail(fmt.Errorf("open the server log: %w", err))
	}
	defer logf.Close() // the server has its own descriptor
	cmd := exec.Command(s.postgres, s.serverArgs()...)
	cmd.Dir = s.baseDir // a directory the unprivileged user can enter
	cmd.Env = s.env
	cmd.Stdout = logf
	cmd.Stderr = logf
	// Detached from the terminal (setsid), as pg_ctl does: a Ctrl-C reaches the test binary, not the server.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: s.cred}
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	pm := &postmaster{cmd: cmd, exited: make(chan struct{})}
	go func() {
		pm.err = cmd.Wait()
		close(pm.exited)
	}()
	s.pm = pm
	s.killedPID = 0
	if err := s.waitReady(ctx, pm); err != nil {
		if pm.alive() {
			if err2 := s.kill(); err2 != nil {
				err = fmt.Errorf("%w; then: %w", err, err2)
			}
		}
		s.pm = nil
		return fail(err)
	}
	return nil
}

// waitReady waits until the postmaster pm has written "ready" into postmaster.pid, as pg_ctl -w
// does: it then accepts connections.
func (s *Server) waitReady(ctx context.Context, pm *postmaster) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	pid := strconv.Itoa(pm.cmd.Process.Pid)
	for {
		// Lines of postmaster.pid: 1 the PID, ..., 8 the status (starting, ready, stopping).
		if data, err := os.ReadFile(filepath.Join(s.dataDir, "postmaster.pid")); err == nil {
			lines := strings.Split(string(data), "\n")
			if len(lines) >= 8 && lines[0] == pid && strings.TrimSpace(lines[7]) == "ready" {
				return nil
			}
		}
		select {
		case <-pm.exited:
			return fmt.Errorf("the server exited: %v", pm.err)
		case <-ctx.Done():
			return fmt.Errorf("the server did not accept connections: %w", context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// removeStaleLocks removes the lock files a killed postmaster left (postmaster.pid and the Unix
// socket's lock), which name its process ID: that process is reaped, and its number may belong to
// another process by now, which the server would take for a postmaster still running.
func (s *Server) removeStaleLocks() error {
	if s.killedPID == 0 {
		return nil
	}
	pid := strconv.Itoa(s.killedPID)
	for _, p := range []string{
		filepath.Join(s.dataDir, "postmaster.pid"),
		filepath.Join(s.sockDir, ".s.PGSQL."+strconv.Itoa(s.port)+".lock"),
	} {
		data, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read the lock file the killed server left: %w", err)
		}
		if first, _, _ := strings.Cut(string(data), "\n"); first == pid {
			if err := os.Remove(p); err != nil {
				return fmt.Errorf("remove the lock file the killed server left: %w", err)
			}
		}
	}
	return nil
}

// stop asks the postmaster to shut down with sig (SIGINT: fast, SIGQUIT: immediate), waits until it
// has exited and copies its log to the log output.
func (s *Server) stop(sig syscall.Signal) error {
	pm := s.pm
	mode := map[syscall.Signal]string{syscall.SIGINT: "fast", syscall.SIGQUIT: "immediate"}[sig]
	if err := pm.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop PostgreSQL (%s): %w", mode, err)
	}
	select {
	case <-pm.exited:
	case <-time.After(stopTimeout):
		return fmt.Errorf("stop PostgreSQL (%s): the server has not exited after %s", mode, stopTimeout)
	}
	s.pm = nil
	s.copyLog()
	return nil
}

// kill sends SIGKILL to the postmaster, reaps it, and cleans up after the crash (cleanUpCrash).
func (s *Server) kill() error {
	pm := s.pm
	if err := pm.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill PostgreSQL: %w", err)
	}
	select {
	case <-pm.exited:
	case <-time.After(stopTimeout):
		return fmt.Errorf("kill PostgreSQL: the postmaster (PID %d) has not exited after %s", pm.cmd.Process.Pid, stopTimeout)
	}
	return s.cleanUpCrash()
}

// cleanUpCrash follows the death of the postmaster, reaped already: it kills every server process
// left (they all work in the data directory, and the dead postmaster forks no more), returns once
// none runs, and notes the postmaster's process ID for Start, which removes the lock files that name
// it.
func (s *Server) cleanUpCrash() error {
	s.killedPID = s.pm.cmd.Process.Pid
	s.pm = nil
	defer s.copyLog()
	deadline := time.Now().Add(stopTimeout)
	for {
		left, err := processesIn(s.dataDir)
		if err != nil {
			return fmt.Errorf("kill PostgreSQL's processes: %w", err)
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kill PostgreSQL's processes: %v still run %s after SIGKILL", left, stopTimeout)
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL) // gone meanwhile: ESRCH
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// processesIn returns the processes, zombies aside, whose working directory is dir: a PostgreSQL
// server's processes all work in its data directory. Processes this one may not inspect are
// skipped; they cannot be the server's, which runs as this process's user or, as root, is visible.
func processesIn(dir string) ([]int, error) {
	want, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("resolve the data directory: %w", err)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// A zombie has no working directory: Readlink fails, as it does for one gone meanwhile.
		if cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd"); err == nil && cwd == want {
			pids = append(pids, pid)
		}
	}
	return pids, nil
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

// findBinaries returns the paths of initdb and postgres, from the same directory: dir if it is
// given, else initdb's on PATH, else the highest version in /usr/lib/postgresql/*/bin.
func findBinaries(dir string) (initdb, postgres string, err error) {
	inDir := func(d string) (string, string, bool) {
		initdb, postgres := filepath.Join(d, "initdb"), filepath.Join(d, "postgres")
		return initdb, postgres, isExecutable(initdb) && isExecutable(postgres)
	}
	if dir != "" {
		if initdb, postgres, ok := inDir(dir); ok {
			return initdb, postgres, nil
		}
		return "", "", fmt.Errorf("%s (looked in %s)", notFound, dir)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if initdb, postgres, ok := inDir(filepath.Dir(p)); ok {
			return initdb, postgres, nil
		}
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
		if initdb, postgres, ok := inDir(d); ok {
			return initdb, postgres, nil
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
