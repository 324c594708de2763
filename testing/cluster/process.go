package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"
)

// process is one running control-plane component.
type process struct {
	component Component
	cmd       *exec.Cmd

	done    chan struct{} // closed when the process has exited
	waitErr error         // the result of cmd.Wait, valid once done is closed

	mu       sync.Mutex
	stopping bool // set before Stop signals the process: an exit after that is expected
}

// startProcess launches binary with args in its own process group, with stdout and stderr written
// to logPath (truncated first), and env added to the inherited environment.
func startProcess(component Component, binary string, args []string, env []string, logPath string) (*process, error) {
	return startProcessLog(component, binary, args, env, logPath, os.O_TRUNC)
}

// startProcessLog is startProcess with the log opened with logFlag added to O_CREATE|O_WRONLY:
// os.O_TRUNC for a first start, os.O_APPEND for a restart that keeps the earlier output.
func startProcessLog(component Component, binary string, args []string, env []string, logPath string, logFlag int) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|logFlag, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log of %s: %w", component, err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = sysProcAttr()
	if err := startCommand(cmd); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", component, err)
	}
	p := &process{component: component, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// isStopping reports whether Stop or a fault has signalled the process, so that its exit is expected.
func (p *process) isStopping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopping
}

// exited reports whether the process has exited, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// stop asks the process group to terminate (SIGTERM), waits up to grace, then kills it (SIGKILL)
// and waits for the exit. It returns an error only if the process had already died on its own
// (a crash during the run) or could not be signalled; an exit caused by our signal is expected.
func (p *process) stop(grace time.Duration) error {
	p.mu.Lock()
	already := p.stopping
	p.stopping = true
	p.mu.Unlock()
	if already {
		<-p.done
		return nil
	}
	if done, err := p.exited(); done {
		return &exitedError{component: p.component, err: err}
	}
	if err := terminate(p.cmd.Process); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("terminate %s: %w", p.component, err)
	}
	// A component paused by a fault (PauseEtcd) acts on SIGTERM only once it runs again.
	_ = resume(p.cmd.Process)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
	}
	if err := kill(p.cmd.Process); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s after %s: %w", p.component, grace, err)
	}
	<-p.done
	return nil
}

// exitedError reports a component that exited on its own before Stop.
type exitedError struct {
	component Component
	err       error // from cmd.Wait
}

func (e *exitedError) Error() string {
	return fmt.Sprintf("%s exited on its own before stop (%s); see logs/%s.log", e.component, exitDescription(e.err), e.component)
}

// exitDescription renders the result of cmd.Wait for messages.
func exitDescription(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// kill sends SIGKILL to the process group and waits for the exit, which is expected (no crash is
// reported for it). It is the fault "the process died": no shutdown, no flushing.
func (p *process) kill() error {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	if done, _ := p.exited(); done {
		return nil
	}
	if err := kill(p.cmd.Process); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s: %w", p.component, err)
	}
	<-p.done
	return nil
}
