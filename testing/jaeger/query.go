package jaeger

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Trace is one trace as Jaeger's query API returns it.
type Trace struct {
	// ID is the trace ID, in hex.
	ID string
	// Spans are the trace's spans, ordered by start time.
	Spans []Span
}

// Span is one span of a Trace.
type Span struct {
	// ID is the span ID, in hex; ParentID its parent's, "" for a root span.
	ID, ParentID string
	// Name is the span's name (Jaeger's operation name).
	Name string
	// Service is the service.name of the process that sent it.
	Service string
	// Start is when the span started; Duration how long it lasted (Jaeger keeps microseconds).
	Start    time.Time
	Duration time.Duration
	// Attributes are the span's attributes (Jaeger's tags), values as text.
	Attributes map[string]string
}

// End returns when the span ended.
func (s Span) End() time.Time { return s.Start.Add(s.Duration) }

// Children returns the spans whose parent is the span id, ordered by start time.
func (tr Trace) Children(id string) []Span {
	var out []Span
	for _, s := range tr.Spans {
		if s.ParentID == id {
			out = append(out, s)
		}
	}
	return out
}

// Find returns the first span, by start time, for which match returns true.
func (tr Trace) Find(match func(Span) bool) (Span, bool) {
	i := slices.IndexFunc(tr.Spans, match)
	if i < 0 {
		return Span{}, false
	}
	return tr.Spans[i], true
}

// Tree returns the trace as text: one span per line, children indented under their parent by start
// time, each with its duration and the attributes named in attrs (all, sorted, when none is named).
func (tr Trace) Tree(attrs ...string) string {
	var b strings.Builder
	known := map[string]bool{}
	for _, s := range tr.Spans {
		known[s.ID] = true
	}
	var walk func(s Span, depth int)
	walk = func(s Span, depth int) {
		fmt.Fprintf(&b, "%s%s (%s)", strings.Repeat("  ", depth), s.Name, s.Duration.Round(10*time.Microsecond))
		keys := attrs
		if len(keys) == 0 {
			keys = sortedKeys(s.Attributes)
		}
		for _, k := range keys {
			if v, ok := s.Attributes[k]; ok {
				fmt.Fprintf(&b, " %s=%s", k, v)
			}
		}
		b.WriteString("\n")
		for _, c := range tr.Children(s.ID) {
			walk(c, depth+1)
		}
	}
	for _, s := range tr.Spans {
		if s.ParentID == "" || !known[s.ParentID] {
			walk(s, 0)
		}
	}
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Services returns the services Jaeger holds traces of.
func (s *Server) Services(ctx context.Context) ([]string, error) {
	var out struct {
		Data []string `json:"data"`
	}
	if err := s.get(ctx, "/api/services", nil, &out); err != nil {
		return nil, err
	}
	slices.Sort(out.Data)
	return out.Data, nil
}

// Traces returns the traces Jaeger holds of service (at most 1000, the newest), each with its spans
// ordered by start time, the traces ordered by their first span's start.
func (s *Server) Traces(ctx context.Context, service string) ([]Trace, error) {
	var out struct {
		Data []apiTrace `json:"data"`
	}
	q := url.Values{"service": {service}, "limit": {"1000"}, "lookback": {"1h"}}
	if err := s.get(ctx, "/api/traces", q, &out); err != nil {
		return nil, err
	}
	traces := make([]Trace, 0, len(out.Data))
	for _, t := range out.Data {
		traces = append(traces, t.convert())
	}
	slices.SortFunc(traces, func(a, b Trace) int { return a.Spans[0].Start.Compare(b.Spans[0].Start) })
	return traces, nil
}

// get reads path from the query API into out.
func (s *Server) get(ctx context.Context, path string, q url.Values, out any) error {
	u := s.QueryURL() + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("query jaeger: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("query jaeger: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("query jaeger %s: read the answer: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("query jaeger %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("query jaeger %s: parse the answer: %w", path, err)
	}
	return nil
}

// apiTrace is a trace in the JSON of Jaeger's query API (the UI's format).
type apiTrace struct {
	TraceID string    `json:"traceID"`
	Spans   []apiSpan `json:"spans"`
	Process map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

type apiSpan struct {
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64 `json:"startTime"` // microseconds since the epoch
	Duration  int64 `json:"duration"`  // microseconds
	Tags      []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	ProcessID string `json:"processID"`
}

func (t apiTrace) convert() Trace {
	tr := Trace{ID: t.TraceID}
	for _, s := range t.Spans {
		span := Span{
			ID:         s.SpanID,
			Name:       s.OperationName,
			Service:    t.Process[s.ProcessID].ServiceName,
			Start:      time.UnixMicro(s.StartTime),
			Duration:   time.Duration(s.Duration) * time.Microsecond,
			Attributes: map[string]string{},
		}
		for _, r := range s.References {
			if r.RefType == "CHILD_OF" {
				span.ParentID = r.SpanID
			}
		}
		for _, tag := range s.Tags {
			span.Attributes[tag.Key] = fmt.Sprint(tag.Value)
		}
		tr.Spans = append(tr.Spans, span)
	}
	slices.SortStableFunc(tr.Spans, func(a, b Span) int {
		return cmp.Or(a.Start.Compare(b.Start), strings.Compare(a.Name, b.Name))
	})
	return tr
}
