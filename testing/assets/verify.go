package assets

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// versionTimeout bounds one `<binary> --version` run; generous because a cold 150 MB binary on a loaded
// machine takes a while to start.
const versionTimeout = 60 * time.Second

// versionText is what c's --version output contains when it is the pinned version.
func versionText(c Component) string {
	switch c {
	case Etcd:
		return "Version: " + strings.TrimPrefix(EtcdVersion, "v")
	case Kwok:
		return KwokVersion
	case Kubectl:
		return "Client Version: " + KubernetesVersion
	case Jaeger:
		return `"gitVersion":"` + JaegerVersion + `"`
	default:
		return "Kubernetes " + KubernetesVersion
	}
}

// versionArgs are the arguments that make c print its version: kubectl and jaeger have no --version
// flag.
func versionArgs(c Component) []string {
	switch c {
	case Kubectl:
		return []string{"version", "--client"}
	case Jaeger:
		return []string{"version"}
	}
	return []string{"--version"}
}

// verify checks that c exists in dir and reports its version (--version; kubectl version --client). With exact, the output must name the
// pinned version (our cache); otherwise any working binary is accepted (KUBEBUILDER_ASSETS and
// setup-envtest directories hold what their owner chose). A missing file yields an error wrapping
// os.ErrNotExist.
func verify(ctx context.Context, dir string, c Component, exact bool) (string, error) {
	path := filepath.Join(dir, string(c))
	for _, p := range requiredFiles(dir, c) {
		st, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		if !st.Mode().IsRegular() {
			return "", fmt.Errorf("%s is not a regular file", p)
		}
	}
	out, err := runVersion(ctx, path, versionArgs(c)...)
	if err != nil {
		return "", err
	}
	if exact && !strings.Contains(out, versionText(c)) {
		return "", fmt.Errorf("%s %s reports %q, want %s", path, strings.Join(versionArgs(c), " "), firstLine(out), versionText(c))
	}
	return out, nil
}

// requiredFiles lists the files that make component c present in dir.
func requiredFiles(dir string, c Component) []string {
	files := []string{filepath.Join(dir, string(c))}
	if c == Kwok {
		files = append(files, filepath.Join(dir, KwokStagesFile))
	}
	return files
}

// runVersion runs `path args...` (the arguments that make it print its version, see versionArgs) and
// returns its combined output.
func runVersion(ctx context.Context, path string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.WaitDelay = 5 * time.Second
	name := strings.Join(append([]string{path}, args...), " ")
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("run %s: %w: %s", name, err, tail(out.String(), 5))
	}
	if strings.TrimSpace(out.String()) == "" {
		return "", fmt.Errorf("run %s: no output", name)
	}
	return out.String(), nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
