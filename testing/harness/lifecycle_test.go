//go:build integration

package harness_test

import (
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/testing/harness"
)

func TestStartAndStopAreClean(t *testing.T) {
	env, err := harness.Start(t.Context())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	var ns corev1.Namespace
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: "default"}, &ns); err != nil {
		t.Errorf("get default namespace: %v", err)
	}
	u, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if err := env.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, err := os.Stat(env.RunDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run directory %s still exists after Stop (stat: %v)", env.RunDir, err)
	}
	if conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second); err == nil {
		conn.Close()
		t.Errorf("the API server still listens on %s after Stop", u.Host)
	}
}

func TestStartFailureInMain(t *testing.T) {
	if os.Getenv(envMode) != "" {
		t.Skip("inside the re-run")
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestNothing$")
	cmd.Env = append(os.Environ(), envMode+"=missing-crd-path")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("re-run with a missing CRD path: err = %v, want exit code 1; output:\n%s", err, out)
	}
	for _, want := range []string{"cannot start the test control plane", "testdata/does-not-exist"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output does not contain %q:\n%s", want, out)
		}
	}
}
