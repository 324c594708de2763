//go:build unix && !linux

package cluster

import (
	"os"
	"os/exec"
	"syscall"
)

// sysProcAttr puts the component in its own process group, so stop signals reach any children.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// startCommand starts cmd.
func startCommand(cmd *exec.Cmd) error { return cmd.Start() }

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
