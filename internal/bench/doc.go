// Package bench measures Convergo's Welcome operator against a baseline operator written the way
// tutorials write them (package baseline), on one full local cluster. It backs `make bench`
// (internal/bench/cmd/bench) and is never part of `make test`.
//
// Run starts the cluster, then, for each implementation in turn, measures converge, memory, restart,
// update and delete, counting the manager's API requests client side with a harness.RequestCounter;
// the Report renders as a markdown table (one column per implementation and their ratio) and as JSON
// with the same figures:
//
//	report, err := bench.Run(ctx, []bench.Implementation{
//		{Name: "convergo", Setup: controller.SetupWithManager},
//		{Name: "baseline", Setup: setupBaseline},
//	}, bench.WithN(50))
//	if err != nil {
//		return err
//	}
//	fmt.Print(report.Markdown())
package bench
