package cluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// sysProcAttr puts the component in its own process group (so stop signals reach any children
// and a terminal's Ctrl-C goes to the test binary first) and asks the kernel to kill it if the
// thread that started it dies, so a crashed or killed test binary does not leave processes behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// spawnRequest asks the spawner thread to start cmd.
type spawnRequest struct {
	cmd    *exec.Cmd
	result chan error
}

var (
	spawnOnce     sync.Once
	spawnRequests chan spawnRequest
)

// startCommand starts cmd from one OS thread that lives as long as the test binary. Pdeathsig
// fires when the thread that forked the child exits, not the process; the Go runtime may retire
// threads (for example after a goroutine locked to one exits), which would kill a healthy
// component. A dedicated locked goroutine that never returns keeps its thread alive.
func startCommand(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnRequests = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread()
			for req := range spawnRequests {
				req.result <- req.cmd.Start()
			}
		}()
	})
	result := make(chan error, 1)
	spawnRequests <- spawnRequest{cmd: cmd, result: result}
	return <-result
}

// terminate sends SIGTERM to the process group of p.
func terminate(p *os.Process) error { return signalGroup(p, syscall.SIGTERM) }

// kill sends SIGKILL to the process group of p.
func kill(p *os.Process) error { return signalGroup(p, syscall.SIGKILL) }

func signalGroup(p *os.Process, sig syscall.Signal) error {
	err := syscall.Kill(-p.Pid, sig)
	if err == syscall.ESRCH {
		return os.ErrProcessDone
	}
	return err
}

// pause sends SIGSTOP to the process group of p and returns once every thread of p has stopped: kill
// only queues the signal, and each thread stops when it next handles it, which on a busy machine can
// be after the caller's next request reached the process (a write "succeeded" while paused).
func pause(p *os.Process) error {
	if err := signalGroup(p, syscall.SIGSTOP); err != nil {
		return err
	}
	return waitStopped(p.Pid, 10*time.Second)
}

// waitStopped polls /proc until every thread of pid is in the stopped state ("T").
func waitStopped(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		running, err := runningThreads(pid)
		if err != nil || running == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d: %d threads still running %s after SIGSTOP", pid, running, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// runningThreads counts the threads of pid that are not stopped.
func runningThreads(pid int) (int, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("read threads of process %d: %w", pid, err)
	}
	running := 0
	for _, task := range tasks {
		data, err := os.ReadFile(filepath.Join(dir, task.Name(), "stat"))
		if err != nil {
			continue // the thread exited
		}
		// The state follows the command name in parentheses, which may itself hold spaces or ')'.
		i := bytes.LastIndexByte(data, ')')
		if i < 0 || i+2 >= len(data) {
			return 0, fmt.Errorf("parse %s/%s/stat: %q", dir, task.Name(), data)
		}
		if state := data[i+2]; state != 'T' && state != 't' {
			running++
		}
	}
	return running, nil
}

// resume sends SIGCONT to the process group of p; it does nothing to a running process.
func resume(p *os.Process) error { return signalGroup(p, syscall.SIGCONT) }
