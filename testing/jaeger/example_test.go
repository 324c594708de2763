package jaeger_test

import (
	"fmt"
	"time"

	"github.com/convergo-dev/convergo/testing/jaeger"
)

// A trace read back with Server.Traces prints as its span tree.
func ExampleTrace_Tree() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := jaeger.Trace{ID: "4bf92f3577b34da6", Spans: []jaeger.Span{
		{ID: "r", Name: "welcome-operator", Start: start, Duration: 12 * time.Millisecond,
			Attributes: map[string]string{"convergo.trigger": "changed", "convergo.result": "waiting"}},
		{ID: "a", ParentID: "r", Name: "apply page", Start: start.Add(time.Millisecond), Duration: time.Millisecond,
			Attributes: map[string]string{"convergo.operation": "Unchanged"}},
		{ID: "b", ParentID: "r", Name: "apply deployment", Start: start.Add(2 * time.Millisecond), Duration: 8 * time.Millisecond,
			Attributes: map[string]string{"convergo.operation": "Updated", "convergo.drift": ".spec.replicas"}},
		{ID: "c", ParentID: "b", Name: "HTTP PATCH", Start: start.Add(3 * time.Millisecond), Duration: 6 * time.Millisecond},
	}}
	fmt.Print(tr.Tree("convergo.trigger", "convergo.result", "convergo.operation", "convergo.drift"))
	// Output:
	// welcome-operator (12ms) convergo.trigger=changed convergo.result=waiting
	//   apply page (1ms) convergo.operation=Unchanged
	//   apply deployment (8ms) convergo.operation=Updated convergo.drift=.spec.replicas
	//     HTTP PATCH (6ms)
}
