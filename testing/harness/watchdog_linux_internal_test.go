package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// startFrom starts a copy of sleep from dir, stopped at the end of the test, and returns its process ID.
func startFrom(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(dir, "sleep"), "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return strconv.Itoa(cmd.Process.Pid)
}

// The guard watches only the processes started from its directory after it was made: another
// environment's, already running, are left to their own guard; a process started from elsewhere is
// not the control plane's.
func TestChildGuardWatchesOnlyNewProcesses(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	dir := t.TempDir()
	data, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sleep"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	startFrom(t, dir) // another environment's
	g, err := newChildGuard(dir)
	if err != nil {
		t.Fatal(err)
	}
	ours := startFrom(t, dir)
	startFrom(t, filepath.Dir(sleep)) // not from the assets directory
	disarm, err := g.arm()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{ours}, g.guarded); diff != "" {
		t.Errorf("guarded processes (-want +got):\n%s", diff)
	}
	if err := disarm(); err != nil {
		t.Fatalf("disarm: %v", err)
	}
	// Disarmed, the watchdog is gone and stopped nothing.
	pid, _ := strconv.Atoi(ours)
	if parentOf(pid) != os.Getpid() {
		t.Errorf("process %s is gone after disarm; the watchdog must not stop anything then", ours)
	}
}
