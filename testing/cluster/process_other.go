//go:build !unix

package cluster

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// sysProcAttr has nothing to set where there are no process groups.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// startCommand starts cmd.
func startCommand(cmd *exec.Cmd) error { return cmd.Start() }

// terminate kills p: without POSIX signals there is no graceful request.
func terminate(p *os.Process) error { return p.Kill() }

// kill kills p.
func kill(p *os.Process) error { return p.Kill() }

// pause is not supported without POSIX signals.
func pause(*os.Process) error { return errors.ErrUnsupported }

// resume does nothing without POSIX signals.
func resume(*os.Process) error { return nil }
