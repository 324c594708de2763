//go:build integration

package harness_test

import (
	"bufio"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convergo-dev/convergo/testing/harness"
)

// A test binary killed without Stop leaves no kube-apiserver or etcd behind: the harness's watchdog
// stops them.
func TestKilledBinaryLeavesNoControlPlane(t *testing.T) {
	if os.Getenv(envMode) != "" {
		t.Skip("inside the re-run")
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestNothing$")
	cmd.Env = append(os.Environ(), envMode+"="+modeKilled)
	out, err := cmd.Output()
	if status, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !status.Signaled() || status.Signal() != syscall.SIGKILL {
		t.Fatalf("re-run: %v, want death by SIGKILL; output:\n%s", err, out)
	}
	hosts := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if name, addr, ok := strings.Cut(sc.Text(), " "); ok {
			u, err := url.Parse(addr)
			if err != nil {
				t.Fatalf("address %q: %v", addr, err)
			}
			hosts[name] = u.Host
		}
	}
	if len(hosts) != 2 {
		t.Fatalf("re-run printed %v, want the API server's and etcd's addresses; output:\n%s", hosts, out)
	}
	for name, host := range hosts {
		harness.Eventually(t, time.Minute, func() (bool, string) {
			conn, err := net.DialTimeout("tcp", host, time.Second)
			if err != nil {
				return true, ""
			}
			conn.Close()
			return false, fmt.Sprintf("%s still listens on %s", name, host)
		})
	}
}
