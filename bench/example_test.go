package bench_test

import (
	"fmt"
	"time"

	"github.com/convergo-dev/convergo/bench"
	"github.com/convergo-dev/convergo/testing/harness"
)

// Rows are the lines of the comparison: each implementation's figure and their ratio. Phases are
// built from the requests a harness.RequestCounter recorded.
func ExampleReport_Rows() {
	converge := func(reqs harness.Requests, seconds time.Duration) bench.Phase {
		return bench.NewPhase(reqs, seconds, seconds, len(reqs))
	}
	create := harness.Request{Verb: "create", Resource: "configmaps"}
	status := harness.Request{Verb: "update", Resource: "welcomes", Subresource: "status"}
	report := &bench.Report{
		N:         2,
		Nodes:     3,
		Started:   time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC),
		GoVersion: "go1.26.0",
		Results: []bench.Result{
			{Implementation: "convergo", Converge: converge(harness.Requests{create, create}, 2*time.Second)},
			{Implementation: "baseline", Converge: converge(harness.Requests{create, create, status, status}, 3*time.Second)},
		},
	}
	for _, row := range report.Rows()[:4] {
		ratio := "n/a"
		if row.Ratio != nil {
			ratio = fmt.Sprintf("%.2f", *row.Ratio)
		}
		fmt.Printf("%s (%s): %v / %v = %s\n", row.Metric, row.Unit, row.Values["convergo"], row.Values["baseline"], ratio)
	}
	// Output:
	// converge: time until all Ready (s): 2 / 3 = 0.67
	// converge: requests (per CR): 1 / 2 = 0.50
	// converge: create (per CR): 1 / 1 = 1.00
	// converge: update (per CR): 0 / 1 = 0.00
}

// Ratio has no value when the divisor is zero, e.g. writes after a restart when neither
// implementation writes.
func ExampleRatio() {
	fmt.Println(bench.Ratio(1, 4))
	fmt.Println(bench.Ratio(0, 0))
	// Output:
	// 0.25 true
	// 0 false
}
