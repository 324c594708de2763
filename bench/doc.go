// Package bench measures Convergo's Welcome operator against the same operator written by hand by an
// expert (package expert) and the way tutorials write it (package baseline), on one full local
// cluster. It backs `make bench` (bench/cmd/bench) and is never part of `make test`.
//
// Run starts the cluster, then, for each implementation in turn, measures converge, memory, restart,
// update and delete, counting the manager's API requests client side with a harness.RequestCounter;
// the Report renders as a markdown table (one column per implementation and the ratios against the
// expert) and as JSON with the same figures:
//
//	report, err := bench.Run(ctx, []bench.Implementation{
//		{Name: "convergo", Setup: controller.SetupWithManager, Cache: controller.CacheOptions},
//		{Name: "expert", Setup: setupExpert, Cache: expert.CacheOptions},
//		{Name: "baseline", Setup: setupBaseline},
//	}, bench.WithN(50))
//	if err != nil {
//		return err
//	}
//	fmt.Print(report.Markdown())
package bench
