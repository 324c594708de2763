//go:build unix

package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// startLocal starts the operator binary as a process of its own session (it outlives the caller),
// with the Deployment's arguments except that its health probes listen on a free local port and its
// metrics are off, and with the container's plain environment variables, against kubeconfig. Its
// output goes to runDir/operator.log and its process ID to runDir/operator.pid. It returns once the operator answers /readyz, or fails with its log's tail.
func (op *Operator) startLocal(ctx context.Context, binary, kubeconfig, runDir string, timeout time.Duration) (*localOperator, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"--kubeconfig=" + kubeconfig}
	for _, a := range op.Deployment.Spec.Template.Spec.Containers[0].Args {
		if strings.HasPrefix(a, "--health-probe-bind-address") || strings.HasPrefix(a, "--metrics-bind-address") || strings.HasPrefix(a, "--kubeconfig") {
			continue
		}
		args = append(args, a)
	}
	args = append(args, fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", port), "--metrics-bind-address=0")

	logPath := filepath.Join(runDir, logFile)
	logOut, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open operator log: %w", err)
	}
	defer logOut.Close()
	fmt.Fprintf(logOut, "--- %s: %s %s\n", time.Now().Format(time.RFC3339), binary, strings.Join(args, " "))
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	// The container's environment (ENABLE_WEBHOOKS=false, say), where it holds plain values.
	for _, e := range op.Deployment.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom == nil {
			cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
		}
	}
	cmd.Stdout = logOut
	cmd.Stderr = logOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the operator %s: %w", binary, err)
	}
	// Reap it when it exits while this process still runs (a test); otherwise init does.
	go func() { _ = cmd.Wait() }()
	lo := &localOperator{pid: cmd.Process.Pid, binary: binary, logPath: logPath}
	if err := os.WriteFile(filepath.Join(runDir, pidFile), []byte(strconv.Itoa(lo.pid)+"\n"), 0o644); err != nil {
		_ = lo.stop()
		return nil, fmt.Errorf("write operator pid file: %w", err)
	}

	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
	deadline := time.Now().Add(timeout)
	for {
		if !lo.alive() {
			return nil, fmt.Errorf("the operator exited at start; the end of its log %s:\n%s", logPath, logTail(logPath, 15))
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return lo, nil
			}
		}
		if time.Now().After(deadline) {
			_ = lo.stop()
			return nil, fmt.Errorf("the operator did not answer %s within %s; the end of its log %s:\n%s", url, timeout, logPath, logTail(logPath, 15))
		}
		select {
		case <-ctx.Done():
			_ = lo.stop()
			return nil, ctx.Err()
		case <-time.After(pollInterval):
		}
	}
}

// runningLocal returns the local operator recorded in runDir when it still runs binary, nil otherwise
// (a process ID the system has since given to another program does not count).
func runningLocal(runDir, binary string) *localOperator {
	data, err := os.ReadFile(filepath.Join(runDir, pidFile))
	if err != nil {
		return nil
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return nil
	}
	lo := &localOperator{pid: pid, binary: binary, logPath: filepath.Join(runDir, logFile)}
	if !lo.alive() {
		return nil
	}
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
		argv0, _, _ := bytes.Cut(cmdline, []byte{0})
		if string(argv0) != binary {
			return nil
		}
	}
	return lo
}

// alive reports whether the process runs (and is not a zombie waiting to be reaped).
func (lo *localOperator) alive() bool {
	if err := syscall.Kill(lo.pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", lo.pid)); err == nil {
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return false
		}
	}
	return true
}

// stop sends SIGTERM (the operator releases its leader Lease and exits), waits up to stopTimeout, then
// kills it.
func (lo *localOperator) stop() error {
	if !lo.alive() {
		return nil
	}
	if err := syscall.Kill(lo.pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop the operator (pid %d): %w", lo.pid, err)
	}
	deadline := time.Now().Add(stopTimeout)
	for lo.alive() {
		if time.Now().After(deadline) {
			_ = syscall.Kill(lo.pid, syscall.SIGKILL)
			return fmt.Errorf("the operator (pid %d) did not exit within %s of SIGTERM and was killed; see %s", lo.pid, stopTimeout, lo.logPath)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}
