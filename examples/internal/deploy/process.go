package deploy

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Files of a local operator in its run directory.
const (
	pidFile        = "operator.pid"
	logFile        = "operator.log"
	kubeconfigFile = "kubeconfig"
)

// stopTimeout bounds the wait for a local operator to exit after SIGTERM; then it is killed.
const stopTimeout = 30 * time.Second

// localOperator is an operator process started from the example's binary.
type localOperator struct {
	pid     int
	binary  string
	logPath string
}

// BuildOperator builds the example's command (./examples/<name>, from the repository root) into
// binary with the go command.
func BuildOperator(ctx context.Context, root, name, binary string) error {
	if err := os.MkdirAll(filepath.Dir(binary), 0o755); err != nil {
		return fmt.Errorf("build the %s operator: %w", name, err)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", binary, "./examples/"+name)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build the %s operator (go build -o %s ./examples/%s): %w\n%s", name, binary, name, err, out)
	}
	return nil
}

// WriteKubeconfig writes to path a kubeconfig for the current context of the kubeconfig file from,
// with its credentials embedded, that impersonates the operator's ServiceAccount: a process using it
// has exactly the permissions the manifests grant the operator.
func (op *Operator) WriteKubeconfig(from, path string) error {
	cfg, err := clientcmd.LoadFromFile(from)
	if err != nil {
		return fmt.Errorf("read kubeconfig %s: %w", from, err)
	}
	if cfg.CurrentContext == "" {
		return fmt.Errorf("kubeconfig %s has no current context: set one with kubectl config use-context", from)
	}
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return fmt.Errorf("kubeconfig %s: %w", from, err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return fmt.Errorf("kubeconfig %s: embed its files: %w", from, err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	user := cfg.AuthInfos[ctx.AuthInfo]
	if user == nil {
		return fmt.Errorf("kubeconfig %s: context %s names no known user", from, cfg.CurrentContext)
	}
	user.Impersonate = op.UserName()
	user.ImpersonateGroups = op.groups()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// logTail returns the last n lines of the file at path.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
