// Package harness runs integration tests against a real control plane: kube-apiserver and etcd built
// from the Go module proxy by testing/assets and started once per test package through
// controller-runtime's envtest, or (WithFullCluster) a full local cluster with controller-manager,
// scheduler and kwok nodes from testing/cluster.
//
// It provides per-test namespaces, a manager that runs for the duration of a test, wait helpers that
// report the last observed state on timeout, and request accounting to assert how many API requests a
// controller makes.
//
//	func TestMain(m *testing.M) {
//		harness.Main(m, harness.WithCRDPaths("../config/crd/bases"), harness.WithSchemeAdders(v1alpha1.AddToScheme))
//	}
//
//	func TestWidget(t *testing.T) {
//		env := harness.Default()
//		ns := env.Namespace(t)
//		counter := harness.NewRequestCounter()
//		env.StartManager(t, func(mgr manager.Manager) error {
//			return (&WidgetReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
//		}, harness.WithManagerConfig(counter.Wrap(env.Config)))
//
//		w := &v1alpha1.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}
//		if err := env.Client.Create(t.Context(), w); err != nil {
//			t.Fatal(err)
//		}
//		harness.WaitForObject(t, env.Client, client.ObjectKeyFromObject(w), w, time.Minute,
//			func(w *v1alpha1.Widget) bool { return meta.IsStatusConditionTrue(w.Status.Conditions, "Ready") })
//		t.Log(counter.Snapshot())
//	}
//
// A cache that lags behind the API server, as a loaded informer does, comes from DelayWatches: every
// watch event reaches the manager's cache that much later. Run each invariant test with it as well:
//
//	env.StartManager(t, setup, harness.WithManagerConfig(harness.DelayWatches(counter.Wrap(env.Config), 300*time.Millisecond)))
//
// With WithKubectl, assets.Ensure also provides kubectl of the same version, and in plain mode envtest's
// helper runs it against the API server as an admin:
//
//	env, err := harness.Start(ctx, harness.WithKubectl())
//	stdout, stderr, err := env.ControlPlane.KubeCtl().Run("get", "namespaces")
//
// With WithWebhooks, Start installs the webhook configurations of kubebuilder's config/webhook, each
// Service replaced by https://127.0.0.1:<port>/<path> and a caBundle of a CA it made, and CRDs whose
// types are convertible in the scheme get a conversion webhook on the same server (envtest's
// WebhookInstallOptions, in plain and full-cluster mode). A manager from StartManager serves the webhooks
// its setup registers there and returns once the server answers; an operator's main run by the test
// takes Env.WebhookOptions for its webhook server, and WaitForWebhookServer waits for it:
//
//	harness.Main(m, harness.WithCRDPaths("../config/crd/bases"), harness.WithWebhooks("../config/webhook"))
//
//	env.StartManager(t, func(mgr manager.Manager) error {
//		return ctrl.NewWebhookManagedBy(mgr, &v1alpha1.Widget{}).WithDefaulter(widgetDefaulter{}).Complete()
//	})
//
// testing/optest builds the steps of an operator's tests on it (objects with cleanups, conflict-retrying
// updates, condition matchers, Deployments marked available, and ExpectNoRequests, which follows each
// change until the reconcile that read it and counts the requests meanwhile); testing/schematest checks
// a CRD's validation with it.
//
// The binaries are built on first use into a per-user cache (several minutes once); KUBEBUILDER_ASSETS
// pointing at a directory holding them skips that.
package harness
