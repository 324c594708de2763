package sharding

import (
	"fmt"
	"slices"
	"sync"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// LogEntry is one line a LogRecorder kept: an error (Error set) or an info line at Level.
type LogEntry struct {
	Error bool
	Level int
	Msg   string
	Err   error
	// Values are the line's key-value pairs, those of the logger first.
	Values []any
}

// Conflict reports whether the entry's error, or an "error" value, is an API conflict.
func (e LogEntry) Conflict() bool {
	if apierrors.IsConflict(e.Err) {
		return true
	}
	for i := 0; i+1 < len(e.Values); i += 2 {
		if k, ok := e.Values[i].(string); ok && k == "error" {
			if err, ok := e.Values[i+1].(error); ok && apierrors.IsConflict(err) {
				return true
			}
		}
	}
	return false
}

func (e LogEntry) String() string {
	if e.Error {
		return fmt.Sprintf("ERROR %s: %v %v", e.Msg, e.Err, e.Values)
	}
	return fmt.Sprintf("V(%d) %s %v", e.Level, e.Msg, e.Values)
}

// LogRecorder is a logr sink for tests that keeps every error and every info line up to V(1), with
// its level, so that a test can tell what was logged at which level.
type LogRecorder struct {
	mu      sync.Mutex
	entries []LogEntry
}

// NewLogRecorder returns a recorder and a logger that writes to it.
func NewLogRecorder() (*LogRecorder, logr.Logger) {
	r := &LogRecorder{}
	return r, logr.New(&recordingSink{r: r})
}

// Entries returns what was logged so far.
func (r *LogRecorder) Entries() []LogEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.entries)
}

type recordingSink struct {
	r      *LogRecorder
	values []any
}

func (s *recordingSink) Init(logr.RuntimeInfo) {}

func (s *recordingSink) Enabled(level int) bool { return level <= 1 }

func (s *recordingSink) Info(level int, msg string, kv ...any) {
	s.add(LogEntry{Level: level, Msg: msg, Values: append(slices.Clone(s.values), kv...)})
}

func (s *recordingSink) Error(err error, msg string, kv ...any) {
	s.add(LogEntry{Error: true, Msg: msg, Err: err, Values: append(slices.Clone(s.values), kv...)})
}

func (s *recordingSink) add(e LogEntry) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.entries = append(s.r.entries, e)
}

func (s *recordingSink) WithValues(kv ...any) logr.LogSink {
	return &recordingSink{r: s.r, values: append(slices.Clone(s.values), kv...)}
}

func (s *recordingSink) WithName(string) logr.LogSink { return s }
