//go:build integration

package postgres

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServer starts a server, uses it, stops it for an outage and starts it again, checking that it
// accepts connections only while it runs and that its data survives the restart.
func TestServer(t *testing.T) {
	srv := Start(t)

	if srv.Host() != "127.0.0.1" {
		t.Errorf("Host() = %q, want 127.0.0.1", srv.Host())
	}
	want := "postgres://postgres@127.0.0.1:" + strconv.Itoa(srv.Port()) + "/postgres?sslmode=disable"
	if srv.URL() != want {
		t.Errorf("URL() = %q, want %q", srv.URL(), want)
	}
	fi, err := os.Stat(filepath.Join(srv.DataDir(), "PG_VERSION"))
	if err != nil {
		t.Fatalf("DataDir() %s is not a data directory: %v", srv.DataDir(), err)
	}
	if log, err := os.ReadFile(srv.LogFile()); err != nil || !strings.Contains(string(log), "database system is ready to accept connections") {
		t.Errorf("LogFile() %s: %v; want the server's log, which says it is ready:\n%s", srv.LogFile(), err, log)
	}
	if os.Geteuid() == 0 {
		if uid := fi.Sys().(*syscall.Stat_t).Uid; uid == 0 {
			t.Errorf("running as root, the data directory belongs to root; want an unprivileged user")
		}
	}

	for sql, want := range map[string]string{
		"SHOW password_encryption": "scram-sha-256",
		"SHOW listen_addresses":    "127.0.0.1",
		"SHOW fsync":               "off",
		"SHOW server_encoding":     "UTF8",
		"SELECT current_user":      "postgres",
	} {
		if got := mustQuery(t, srv, sql); got != want {
			t.Errorf("%s = %q, want %q", sql, got, want)
		}
	}
	mustQuery(t, srv, "CREATE TABLE survivor (x int); INSERT INTO survivor VALUES (42)")

	srv.Stop(t)
	if out, err := query(t, srv, "SELECT 1"); err == nil {
		t.Fatalf("after Stop, the server still answers: %s", out)
	}
	if conn, err := net.DialTimeout("tcp", net.JoinHostPort(srv.Host(), strconv.Itoa(srv.Port())), 5*time.Second); err == nil {
		conn.Close()
		t.Fatalf("after Stop, port %d still accepts connections", srv.Port())
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("after Stop, dialing port %d: %v; want connection refused", srv.Port(), err)
	}

	srv.Start(t)
	if got := mustQuery(t, srv, "SELECT x FROM survivor"); got != "42" {
		t.Errorf("after Start, SELECT x FROM survivor = %q, want 42", got)
	}
}

// TestTwoServers runs two servers side by side, as tests in parallel packages do.
func TestTwoServers(t *testing.T) {
	a, b := Start(t), Start(t)
	if a.Port() == b.Port() || a.DataDir() == b.DataDir() {
		t.Fatalf("two servers share port %d or data directory %s", a.Port(), a.DataDir())
	}
	mustQuery(t, a, "CREATE TABLE only_in_a (x int)")
	if out, err := query(t, b, "SELECT * FROM only_in_a"); err == nil {
		t.Errorf("the second server sees the first one's table: %s", out)
	}
	b.Stop(t)
	mustQuery(t, a, "SELECT * FROM only_in_a")
}

// TestNewClose starts a server as a program does, with New, and checks that Close stops it and
// removes its files, and that a second Close does nothing.
func TestNewClose(t *testing.T) {
	srv, err := New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() }) // if the test stops before its own Close
	if got := mustQuery(t, srv, "SELECT 1"); got != "1" {
		t.Errorf("SELECT 1 = %q, want 1", got)
	}
	base := filepath.Dir(srv.DataDir())
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat(base); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Close, the server's directory %s: %v; want it removed", base, err)
	}
	if conn, err := net.DialTimeout("tcp", net.JoinHostPort(srv.Host(), strconv.Itoa(srv.Port())), 5*time.Second); err == nil {
		conn.Close()
		t.Errorf("after Close, port %d still accepts connections", srv.Port())
	}
	if err := srv.Close(); err != nil {
		t.Errorf("a second Close: %v; want nil", err)
	}
}

// TestMissingBinaries checks that the failure says what to install, from findBinaries and from New.
func TestMissingBinaries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nonexistent")
	_, _, err := findBinaries(dir)
	if err == nil || !strings.Contains(err.Error(), "apt-get install -y postgresql") {
		t.Errorf("findBinaries in an empty directory: %v; want the hint to install postgresql", err)
	}
	srv, err := New(t.Context(), WithBinDir(dir))
	if err == nil {
		_ = srv.Close()
		t.Fatal("New without the server binaries succeeded")
	}
	if !strings.Contains(err.Error(), "apt-get install -y postgresql") {
		t.Errorf("New without the server binaries: %v; want the hint to install postgresql", err)
	}
}

// query runs sql with psql from the server's bin directory and returns its unaligned output.
func query(t *testing.T, srv *Server, sql string) (string, error) {
	t.Helper()
	psql := filepath.Join(srv.binDir, "psql")
	if !isExecutable(psql) {
		var err error
		if psql, err = exec.LookPath("psql"); err != nil {
			t.Fatalf("psql not found next to initdb (%s) nor on PATH", srv.binDir)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, psql, "-X", "-w", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", srv.URL(), "-c", sql)
	cmd.Env = append(environ(), "PGCONNECT_TIMEOUT=10")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func mustQuery(t *testing.T, srv *Server, sql string) string {
	t.Helper()
	out, err := query(t, srv, sql)
	if err != nil {
		t.Fatalf("psql -c %q: %v\n%s", sql, err, out)
	}
	return out
}
