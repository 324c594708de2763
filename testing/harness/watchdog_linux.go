package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/convergo-dev/convergo/testing/internal/procstat"
)

// childGuard stops the processes a control plane starts from dir (envtest's kube-apiserver and etcd)
// when this process dies without Stop: a test binary killed, or ended by go test's -timeout, which
// runs no deferred function. envtest starts its processes with no hook for the parent-death signal
// the full cluster's components get (testing/cluster), hence a watchdog.
type childGuard struct {
	dir string
	// before holds the processes already running from dir when the guard was made: another
	// environment's of this test binary, which its own guard covers.
	before []string
	// guarded holds the processes arm watches.
	guarded []string
}

// newChildGuard returns the guard of the processes that will be started from dir; make it before
// starting them.
func newChildGuard(dir string) (*childGuard, error) {
	before, err := childrenFrom(dir)
	if err != nil {
		return nil, err
	}
	return &childGuard{dir: dir, before: before}, nil
}

// arm starts the watchdog of the processes started from dir since newChildGuard: a shell that reads
// its standard input, a pipe only this process writes to. When this process dies, the kernel closes
// the pipe, the read ends, and the watchdog stops the processes: SIGTERM, and SIGKILL two seconds
// later. The returned function disarms it: it kills the watchdog before anything else, so it never
// signals a process ID the system may give to another process once the control plane has stopped.
func (g *childGuard) arm() (disarm func() error, err error) {
	now, err := childrenFrom(g.dir)
	if err != nil {
		return nil, err
	}
	var pids []string
	for _, pid := range now {
		if !slices.Contains(g.before, pid) {
			pids = append(pids, pid)
		}
	}
	g.guarded = pids
	if len(pids) == 0 {
		return func() error { return nil }, nil
	}
	list := strings.Join(pids, " ")
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("watchdog pipe: %w", err)
	}
	cmd := exec.Command("/bin/sh", "-c", "read _; kill -TERM "+list+" 2>/dev/null; sleep 2; kill -KILL "+list+" 2>/dev/null")
	cmd.Stdin = r
	// Its own process group: a terminal's Ctrl-C reaches the test binary, whose handler stops the
	// control plane, not the watchdog.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("start watchdog of %s: %w", list, err)
	}
	return func() error {
		kerr := cmd.Process.Kill()
		_ = cmd.Wait()
		w.Close()
		if kerr != nil && !errors.Is(kerr, os.ErrProcessDone) {
			return fmt.Errorf("stop watchdog: %w", kerr)
		}
		return nil
	}, nil
}

// childrenFrom returns the process IDs of this process's children whose executable is in dir.
func childrenFrom(dir string) ([]string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	self := os.Getpid()
	var pids []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || parentOf(pid) != self {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err == nil && filepath.Dir(exe) == filepath.Clean(dir) {
			pids = append(pids, e.Name())
		}
	}
	return pids, nil
}

// parentOf returns the parent process ID of pid (procstat), or -1.
func parentOf(pid int) int {
	fields, err := procstat.Read(pid)
	if err != nil || len(fields) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return -1
	}
	return ppid
}
