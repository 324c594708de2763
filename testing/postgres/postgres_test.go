//go:build integration

package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/convergo-dev/convergo/testing/harness"
	"github.com/convergo-dev/convergo/testing/internal/procstat"
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

// TestSettings starts a server with settings of the test's and checks that the server runs with
// them, after a restart too, and that the package's defaults hold unless changed.
func TestSettings(t *testing.T) {
	srv := Start(t, WithSetting("work_mem", "7MB"), WithSetting("fsync", "on"),
		WithSetting("statement_timeout", "1min"), WithSetting("statement_timeout", "2min"))
	cases := map[string]string{
		"SHOW work_mem":          "7MB",
		"SHOW fsync":             "on",   // a default changed
		"SHOW log_statement":     "all",  // a default kept
		"SHOW statement_timeout": "2min", // the later setting wins
		"SHOW listen_addresses":  "127.0.0.1",
	}
	check := func(t *testing.T) {
		for sql, want := range cases {
			if got := mustQuery(t, srv, sql); got != want {
				t.Errorf("%s = %q, want %q", sql, got, want)
			}
		}
	}
	check(t)
	srv.Stop(t)
	srv.Start(t)
	t.Run("after a restart", check)
}

// TestSettingsAlterSystem checks that ALTER SYSTEM changes a setting the package set (a default
// and one of WithSetting's) once the configuration is reloaded, as on any server, and that ALTER
// SYSTEM RESET gives back the package's value.
func TestSettingsAlterSystem(t *testing.T) {
	srv := Start(t, WithSetting("work_mem", "7MB"))
	for _, tc := range []struct{ name, set, want string }{
		{"log_statement", "ddl", "all"},
		{"work_mem", "9MB", "7MB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustQuery(t, srv, fmt.Sprintf("ALTER SYSTEM SET %s = '%s'", tc.name, tc.set))
			mustQuery(t, srv, "SELECT pg_reload_conf()")
			awaitSetting(t, srv, tc.name, tc.set)
			mustQuery(t, srv, "ALTER SYSTEM RESET "+tc.name)
			mustQuery(t, srv, "SELECT pg_reload_conf()")
			awaitSetting(t, srv, tc.name, tc.want)
		})
	}
}

// awaitSetting waits until a new connection runs with the setting name at want: the server reloads
// its configuration when it handles pg_reload_conf's signal, and psql connects anew each time.
func awaitSetting(t *testing.T, srv *Server, name, want string) {
	t.Helper()
	var got string
	for range 300 {
		if got = mustQuery(t, srv, "SHOW "+name); got == want {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("SHOW %s = %q, want %q", name, got, want)
}

// TestSettingRejectedByServer checks that a setting the server refuses fails New with the server's
// reason.
func TestSettingRejectedByServer(t *testing.T) {
	srv, err := New(t.Context(), WithSetting("work_mem", "lots"))
	if err == nil {
		_ = srv.Close()
		t.Fatal("New with work_mem=lots succeeded")
	}
	if !strings.Contains(err.Error(), `invalid value for parameter "work_mem"`) {
		t.Errorf("New with work_mem=lots: %v; want the server's reason", err)
	}
}

// TestKillAndStart crashes the server, by Kill and by a SIGKILL from outside the package, with a
// transaction open, and checks that nothing of it runs on, that the data directory is left as a
// crash leaves it, and that Start recovers it on the same port: committed data survives, the open
// transaction's does not. Each server crashes twice, so recovery is no one-off.
func TestKillAndStart(t *testing.T) {
	cases := map[string]func(t *testing.T, srv *Server){
		"Kill": func(t *testing.T, srv *Server) { srv.Kill(t) },
		"SIGKILL from outside": func(t *testing.T, srv *Server) {
			if err := syscall.Kill(postmasterPID(t, srv), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-srv.pm.exited // the package reaps it; Start cleans up after it
			// The backends outlive the postmaster until they notice its death; one that reads the
			// test's COMMIT first commits it. Wait until they are gone, as after a real crash.
			harness.Eventually(t, time.Minute, func() (bool, string) {
				left, err := processesIn(srv.DataDir())
				return err == nil && len(left) == 0, fmt.Sprintf("server processes %v (%v) outlive the postmaster", left, err)
			})
		},
	}
	for name, crash := range cases {
		t.Run(name, func(t *testing.T) {
			srv := Start(t)
			port := srv.Port()
			mustQuery(t, srv, "CREATE TABLE survivor (x int); INSERT INTO survivor VALUES (1)")
			for round := 2; round <= 3; round++ {
				ctx := t.Context()
				conn := connect(t, srv)
				tx, err := conn.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.Exec(ctx, "INSERT INTO survivor VALUES (-1)"); err != nil {
					t.Fatal(err)
				}
				pid := postmasterPID(t, srv)

				crash(t, srv)
				if name == "Kill" {
					if left, err := processesIn(srv.DataDir()); err != nil || len(left) != 0 {
						t.Errorf("after Kill, server processes %v (%v) still run; want none", left, err)
					}
					if fields, err := procstat.Read(pid); err == nil && fields[0] == "Z" && fields[1] == strconv.Itoa(os.Getpid()) {
						t.Errorf("after Kill, the postmaster %d is an unreaped child of the test", pid)
					}
					if data, err := os.ReadFile(filepath.Join(srv.DataDir(), "postmaster.pid")); err != nil || !strings.HasPrefix(string(data), strconv.Itoa(pid)+"\n") {
						t.Errorf("after Kill, postmaster.pid: %q, %v; want it left behind, naming PID %d", data, err, pid)
					}
					if out, err := query(t, srv, "SELECT 1"); err == nil {
						t.Errorf("after Kill, the server still answers: %s", out)
					}
				}
				if err := tx.Commit(ctx); err == nil {
					t.Errorf("a transaction open across the crash committed")
				}

				srv.Start(t)
				if srv.Port() != port {
					t.Errorf("after the crash, port %d; want %d", srv.Port(), port)
				}
				mustQuery(t, srv, fmt.Sprintf("INSERT INTO survivor VALUES (%d)", round))
				want := "1"
				for r := 2; r <= round; r++ {
					want += "," + strconv.Itoa(r)
				}
				if got := mustQuery(t, srv, "SELECT string_agg(x::text, ',' ORDER BY x) FROM survivor"); got != want {
					t.Errorf("after crash %d, survivor holds %s; want %s (committed rows, not the open transaction's -1)", round-1, got, want)
				}
			}
			if log, err := os.ReadFile(srv.LogFile()); err != nil || !strings.Contains(string(log), "database system was interrupted") {
				t.Errorf("the server log does not show a crash recovery (%v):\n%s", err, log)
			}
		})
	}
}

// TestKillWhenNotRunning checks that Kill and Stop refuse a server that is not running.
func TestKillWhenNotRunning(t *testing.T) {
	srv := Start(t)
	srv.Kill(t)
	for name, op := range map[string]func(testing.TB){"Kill": srv.Kill, "Stop": srv.Stop} {
		t.Run(name, func(t *testing.T) {
			rec := &fatalRecorder{TB: t}
			done := make(chan struct{})
			go func() { // Fatal ends the goroutine it runs on
				defer close(done)
				op(rec)
			}()
			<-done
			if len(rec.fatals) != 1 || !strings.Contains(rec.fatals[0], "not running") {
				t.Errorf("%s of a killed server: failures %q; want one saying it is not running", name, rec.fatals)
			}
		})
	}
}

// TestStatements runs statements through both of PostgreSQL's query protocols and checks that
// Statements returns them, since a mark, with their connection's PID, user, database and
// parameters, and that the log keeps them across a crash.
func TestStatements(t *testing.T) {
	srv := Start(t)
	ctx := t.Context()
	conn := connect(t, srv)
	var pid int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}

	mark := srv.MarkLog()
	if _, err := conn.Exec(ctx, "CREATE TABLE t (x int, note text)"); err != nil { // no arguments: simple protocol
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO t VALUES ($1, $2)", 42, "it's\nsaid"); err != nil { // extended
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "UPDATE t\n\tSET note = 'x'\nWHERE x = $1", 42); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT 1/0"); err == nil {
		t.Fatal("SELECT 1/0 succeeded")
	}
	st := func(text, params string) Statement {
		return Statement{PID: pid, User: "postgres", Database: "postgres", Text: text, Parameters: params}
	}
	want := []Statement{
		st("CREATE TABLE t (x int, note text)", ""),
		st("INSERT INTO t VALUES ($1, $2)", "$1 = '42', $2 = 'it''s\nsaid'"),
		st("UPDATE t\n\tSET note = 'x'\nWHERE x = $1", "$1 = '42'"),
		st("SELECT 1/0", ""),
	}
	if diff := cmp.Diff(want, srv.Statements(t, mark)); diff != "" {
		t.Errorf("Statements since the mark (-want +got):\n%s\nserver log:\n%s", diff, srv.logTail(int64(mark)))
	}

	mark = srv.MarkLog()
	mustQuery(t, srv, "SELECT 2") // psql: another connection
	got := srv.Statements(t, mark)
	if len(got) != 1 || got[0].Text != "SELECT 2" || got[0].PID == pid {
		t.Errorf("Statements since the second mark = %v; want SELECT 2 alone, from another backend than %d", got, pid)
	}

	srv.Kill(t)
	srv.Start(t)
	all := srv.Statements(t, 0)
	for _, text := range []string{"SELECT pg_backend_pid()", "CREATE TABLE t (x int, note text)", "SELECT 2"} {
		if !slices.ContainsFunc(all, func(st Statement) bool { return st.Text == text }) {
			t.Errorf("after a crash and a start, Statements since 0 lacks %q:\n%v", text, all)
		}
	}
}

// connect opens a pgx connection to srv for the test's duration.
func connect(t *testing.T, srv *Server) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// postmasterPID returns the postmaster's process ID from postmaster.pid.
func postmasterPID(t *testing.T, srv *Server) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(srv.DataDir(), "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(first)
	if err != nil {
		t.Fatalf("postmaster.pid: %v", err)
	}
	return pid
}

// fatalRecorder records Fatal's message and ends the goroutine, as testing.T does, without failing
// the test.
type fatalRecorder struct {
	testing.TB
	fatals []string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatal(args ...any) {
	r.fatals = append(r.fatals, fmt.Sprint(args...))
	runtime.Goexit()
}
