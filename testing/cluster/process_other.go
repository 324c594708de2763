//go:build !unix

package cluster

import (
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
