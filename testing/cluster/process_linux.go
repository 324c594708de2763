package cluster

import (
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
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

// pause sends SIGSTOP to the process group of p: every thread stops until resume.
func pause(p *os.Process) error { return signalGroup(p, syscall.SIGSTOP) }

// resume sends SIGCONT to the process group of p; it does nothing to a running process.
func resume(p *os.Process) error { return signalGroup(p, syscall.SIGCONT) }
