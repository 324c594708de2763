// Package operator holds the set-up every operator's main repeats, made of controller-runtime's own
// pieces and wrapping none: the standard flags (metrics, health probes, leader election, profiling,
// workers, logging), the manager options they give, the logger, the signal handler, and the start
// with health checks. A main adds its own flags and controllers:
//
//	func main() {
//		var f operator.Flags
//		f.Bind(flag.CommandLine)
//		flag.Parse()
//		f.Main("memcached operator", func(ctx context.Context) error {
//			mgr, err := f.NewManager("memcached.cache.convergo.dev", controller.CacheOptions, v1alpha1.AddToScheme)
//			if err != nil {
//				return err
//			}
//			if err := controller.SetupWithManager(mgr); err != nil {
//				return err
//			}
//			return operator.Start(ctx, mgr)
//		})
//	}
package operator
