package postgres

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Statement is one statement a client ran, as the server logged it (log_statement=all, the
// default of this package).
type Statement struct {
	// PID is the process ID of the backend that ran it. Each connection has a backend of its own,
	// so statements with the same PID came through the same connection, in order (a later
	// connection may get the number of one that has ended).
	PID int
	// User and Database are the role and the database of the connection.
	User, Database string
	// Text is the statement as the client sent it: with $1, $2... placeholders when it came
	// through the extended query protocol (as pgx sends statements with arguments), several
	// statements separated by semicolons when a simple query held them.
	Text string
	// Parameters holds the values bound to the placeholders as the server logs them
	// ("$1 = 'app', $2 = '42'"), "" when there are none.
	Parameters string
}

// String renders the statement for failure messages.
func (st Statement) String() string {
	if st.Parameters == "" {
		return fmt.Sprintf("[%d] %s", st.PID, st.Text)
	}
	return fmt.Sprintf("[%d] %s (%s)", st.PID, st.Text, st.Parameters)
}

// LogMark is a point in the server's log, from MarkLog. The zero LogMark is the log's start.
type LogMark int64

// MarkLog returns the current end of the server's log, for Statements to return only the
// statements run after this call.
func (s *Server) MarkLog() LogMark { return LogMark(s.logSize()) }

// Statements returns the statements clients ran since mark (0: since New), in the order the server
// logged them, parsed from the server's log. The server logs each top-level statement once, as it
// starts running it, so a statement is in the log by the time its client has the answer (or the
// error). Not logged: statements inside functions, and statements refused before they ran (a syntax
// error; through the extended protocol, any error of parse analysis, such as a missing table). The
// log spans restarts: a statement run before Stop or Kill is still there after Start. Only
// log_statement's entries count (with WithSetting("log_statement", "ddl"), only DDL). Statements
// fails the test if the log cannot be read.
func (s *Server) Statements(t testing.TB, since LogMark) []Statement {
	t.Helper()
	sts, err := readStatements(s.logFile, int64(since))
	if err != nil {
		t.Fatal(err)
	}
	return sts
}

// readStatements parses the statements of the log at path from offset from.
func readStatements(path string, from int64) ([]Statement, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the PostgreSQL server log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read the PostgreSQL server log: %w", err)
	}
	if from < 0 || from > fi.Size() {
		return nil, fmt.Errorf("read the PostgreSQL server log: mark %d is beyond its end (%d bytes)", from, fi.Size())
	}
	data, err := io.ReadAll(io.NewSectionReader(f, from, fi.Size()-from))
	if err != nil {
		return nil, fmt.Errorf("read the PostgreSQL server log: %w", err)
	}
	// A line without its newline is still being written.
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		data = nil
	}
	return parseStatements(string(data)), nil
}

// logEntryStart matches the first line of a log entry, as logLinePrefix starts it: the time, the
// process ID in brackets, "user@database " for a client's backend, the severity and the message.
var logEntryStart = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \S+ \[(\d+)\] (.*?)` +
	`(DEBUG[1-5]|INFO|NOTICE|WARNING|ERROR|LOG|FATAL|PANIC|DETAIL|HINT|QUERY|CONTEXT|LOCATION|STATEMENT):  (.*)$`)

// parseStatements returns the statements of a server log. Each entry's first line starts with the
// prefix; the server starts every further line of a message with a tab. A statement is a LOG entry
// "statement: TEXT" (simple query protocol) or "execute NAME: TEXT" (extended), the latter followed
// by a DETAIL entry "parameters: ..." when values were bound.
func parseStatements(log string) []Statement {
	var (
		out     []Statement
		cur     *Statement // the statement the lines being read belong to, if any
		inParam bool       // the lines being read continue cur's parameters
	)
	for line := range strings.Lines(log) {
		line = strings.TrimSuffix(line, "\n")
		if rest, ok := strings.CutPrefix(line, "\t"); ok {
			switch {
			case cur != nil && inParam:
				cur.Parameters += "\n" + rest
			case cur != nil:
				cur.Text += "\n" + rest
			}
			continue
		}
		m := logEntryStart.FindStringSubmatch(line)
		if m == nil { // not the server's entry (a library's output): it ends the one before
			cur, inParam = nil, false
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		who, level, msg := strings.TrimSuffix(m[2], " "), m[3], m[4]
		if level == "DETAIL" && cur != nil && cur.PID == pid && cur.Parameters == "" {
			if params, ok := strings.CutPrefix(msg, "parameters: "); ok {
				cur.Parameters, inParam = params, true
				continue
			}
		}
		cur, inParam = nil, false
		if level != "LOG" {
			continue
		}
		text, ok := statementText(msg)
		if !ok {
			continue
		}
		st := Statement{PID: pid, Text: text}
		if i := strings.LastIndexByte(who, '@'); i >= 0 {
			st.User, st.Database = who[:i], who[i+1:]
		}
		out = append(out, st)
		cur = &out[len(out)-1]
	}
	return out
}

// statementText returns the statement of a log_statement message: "statement: TEXT" or "execute
// NAME: TEXT" ("execute fetch from NAME: TEXT", a portal's further rows, is not a statement of its
// own).
func statementText(msg string) (string, bool) {
	if text, ok := strings.CutPrefix(msg, "statement: "); ok {
		return text, true
	}
	if strings.HasPrefix(msg, "execute fetch from ") {
		return "", false
	}
	if rest, ok := strings.CutPrefix(msg, "execute "); ok {
		// The name is the prepared statement's ("<unnamed>" or a name), maybe with "/portal"; the
		// server puts ": " between it and the statement.
		if _, text, ok := strings.Cut(rest, ": "); ok {
			return text, true
		}
	}
	return "", false
}
