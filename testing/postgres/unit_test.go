package postgres

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// These tests need no server.

// TestWithSettingRefused checks that New refuses the settings WithSetting may not set before it
// looks for the server binaries or starts anything.
func TestWithSettingRefused(t *testing.T) {
	cases := map[string]struct {
		name, value string
		want        string
	}{
		"empty name":          {name: "", value: "x", want: "not a parameter name"},
		"name with =":         {name: "work_mem=1MB", value: "x", want: "not a parameter name"},
		"name with a space":   {name: "work mem", value: "1MB", want: "not a parameter name"},
		"the port":            {name: "port", value: "5432", want: "setting port is the package's own"},
		"where it logs":       {name: "Log_Destination", value: "csvlog", want: "setting Log_Destination is the package's own"},
		"the log line prefix": {name: "log_line_prefix", value: "%t ", want: "is the package's own"},
		"a NUL in the value":  {name: "work_mem", value: "1\x00MB", want: "NUL byte"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// A bin directory without binaries: had the setting passed, New would fail for them.
			srv, err := New(t.Context(), WithSetting("work_mem", "1MB"), WithSetting(tc.name, tc.value), WithBinDir(t.TempDir()))
			if err == nil {
				_ = srv.Close()
				t.Fatalf("New with setting %q=%q succeeded", tc.name, tc.value)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New with setting %q=%q: %v; want an error saying %q", tc.name, tc.value, err, tc.want)
			}
		})
	}
}

// TestServerArgs checks that the command line holds the package's own settings only, so that
// ALTER SYSTEM can change the rest.
func TestServerArgs(t *testing.T) {
	s := &Server{dataDir: "/d", sockDir: "/s", port: 5433}
	WithSetting("work_mem", "7MB")(&s.cfg)
	want := []string{"-D", "/d",
		"-c", "port=5433", "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=/s",
		"-c", "logging_collector=off", "-c", "log_destination=stderr", "-c", "log_line_prefix=%m [%p] %q%u@%d ",
		"-c", "lc_messages=C"}
	if diff := cmp.Diff(want, s.serverArgs()); diff != "" {
		t.Errorf("serverArgs (-want +got):\n%s", diff)
	}
}

// TestSettingsConf checks the lines written into postgresql.conf: the defaults, then WithSetting's
// in the order given (the server keeps a name's last line), with quotes and backslashes escaped.
func TestSettingsConf(t *testing.T) {
	s := &Server{}
	WithSetting("fsync", "on")(&s.cfg)
	WithSetting("work_mem", "7MB")(&s.cfg)
	WithSetting("application_name", `it's C:\x`)(&s.cfg)
	want := "\n# testing/postgres: the package's defaults, then WithSetting's; the last line of a name wins\n" +
		"fsync = 'off'\nlog_statement = 'all'\n" +
		"fsync = 'on'\nwork_mem = '7MB'\napplication_name = 'it''s C:\\\\x'\n"
	if diff := cmp.Diff(want, s.settingsConf()); diff != "" {
		t.Errorf("settingsConf (-want +got):\n%s", diff)
	}
}

// logSample is a server log as PostgreSQL 15 writes it with this package's log_line_prefix.
const logSample = `2026-01-02 10:00:00.362 UTC [100] LOG:  database system is ready to accept connections
2026-01-02 10:00:01.001 UTC [201] postgres@postgres LOG:  statement: CREATE TABLE t (x int)
2026-01-02 10:00:01.002 UTC [201] postgres@postgres LOG:  execute stmtcache_66c6: INSERT INTO t VALUES ($1, $2)
2026-01-02 10:00:01.002 UTC [201] postgres@postgres DETAIL:  parameters: $1 = '42', $2 = 'it''s
	said'
2026-01-02 10:00:01.003 UTC [202] app@payroll LOG:  statement: SELECT 1;
	SELECT 2
2026-01-02 10:00:01.004 UTC [201] postgres@postgres ERROR:  relation "nope" does not exist at character 13
2026-01-02 10:00:01.004 UTC [201] postgres@postgres STATEMENT:  INSERT INTO nope VALUES ($1)
2026-01-02 10:00:01.005 UTC [202] app@payroll LOG:  execute <unnamed>: UPDATE t
		SET x = $1
2026-01-02 10:00:01.005 UTC [202] app@payroll DETAIL:  parameters: $1 = '7'
2026-01-02 10:00:01.006 UTC [202] app@payroll LOG:  execute fetch from <unnamed>/c1: SELECT x FROM t
2026-01-02 10:00:01.007 UTC [203] odd@name@db LOG:  execute s1/p1: SELECT 'LOG:  not a level'
2026-01-02 10:00:01.008 UTC [201] postgres@postgres LOG:  statement: SELECT 1/0
2026-01-02 10:00:01.008 UTC [201] postgres@postgres ERROR:  division by zero
2026-01-02 10:00:01.008 UTC [201] postgres@postgres STATEMENT:  SELECT 1/0
2026-01-02 10:00:02.000 UTC [150] LOG:  checkpoint starting: time
some library's line on stderr
	a line after it, not a statement's
2026-01-02 10:00:03.000 UTC [204] postgres@postgres DETAIL:  parameters: $1 = 'orphan'
`

// TestParseStatements checks the parser against a log with each kind of entry.
func TestParseStatements(t *testing.T) {
	want := []Statement{
		{PID: 201, User: "postgres", Database: "postgres", Text: "CREATE TABLE t (x int)"},
		{PID: 201, User: "postgres", Database: "postgres", Text: "INSERT INTO t VALUES ($1, $2)", Parameters: "$1 = '42', $2 = 'it''s\nsaid'"},
		{PID: 202, User: "app", Database: "payroll", Text: "SELECT 1;\nSELECT 2"},
		{PID: 202, User: "app", Database: "payroll", Text: "UPDATE t\n\tSET x = $1", Parameters: "$1 = '7'"},
		{PID: 203, User: "odd@name", Database: "db", Text: "SELECT 'LOG:  not a level'"},
		{PID: 201, User: "postgres", Database: "postgres", Text: "SELECT 1/0"},
	}
	if diff := cmp.Diff(want, parseStatements(logSample)); diff != "" {
		t.Errorf("parseStatements (-want +got):\n%s", diff)
	}
}

// TestReadStatements checks reading from a mark and that a line still being written is left out.
func TestReadStatements(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.log")
	first := "2026-01-02 10:00:01.001 UTC [201] postgres@postgres LOG:  statement: SELECT 1\n"
	second := "2026-01-02 10:00:01.002 UTC [201] postgres@postgres LOG:  statement: SELECT 2\n"
	partial := "2026-01-02 10:00:01.003 UTC [201] postgres@postgres LOG:  statement: SELECT 3"
	if err := os.WriteFile(path, []byte(first+second+partial), 0o600); err != nil {
		t.Fatal(err)
	}
	stmt := func(text string) Statement {
		return Statement{PID: 201, User: "postgres", Database: "postgres", Text: text}
	}
	cases := map[string]struct {
		from    int64
		want    []Statement
		wantErr string
	}{
		"from the start":        {from: 0, want: []Statement{stmt("SELECT 1"), stmt("SELECT 2")}},
		"from a mark":           {from: int64(len(first)), want: []Statement{stmt("SELECT 2")}},
		"from the end":          {from: int64(len(first + second + partial))},
		"from beyond the end":   {from: int64(len(first+second+partial)) + 1, wantErr: "beyond its end"},
		"from before the start": {from: -1, wantErr: "beyond its end"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := readStatements(path, tc.from)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("readStatements from %d: %v; want an error saying %q", tc.from, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("readStatements from %d (-want +got):\n%s", tc.from, diff)
			}
		})
	}
}
