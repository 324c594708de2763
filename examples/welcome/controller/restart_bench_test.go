//go:build integration

package controller_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/welcome/controller"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/testing/harness"
	"github.com/convergo-dev/convergo/testing/optest"
)

// restartWelcomes is how many Welcomes BenchmarkRestart restarts the operator on (each has a Service,
// and the test control plane has about 250 service IPs).
const restartWelcomes = 200

// BenchmarkRestart measures a restart of the Welcome operator as its main runs it (the shipped cache
// options) on restartWelcomes converged Welcomes: from a new manager until
// every Welcome was reconciled once. Run it with -cpuprofile to see where a restart's CPU goes:
//
//	go test -run '^$' -bench BenchmarkRestart -cpuprofile /tmp/restart.cpu ./examples/welcome/controller/
func BenchmarkRestart(b *testing.B) {
	env := harness.Default()
	ns := env.Namespace(b)
	welcomes := make([]*v1alpha1.Welcome, restartWelcomes)
	for i := range welcomes {
		welcomes[i] = &v1alpha1.Welcome{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("w-%03d", i)},
			Spec:       v1alpha1.WelcomeSpec{Name: "Restart"},
		}
		if err := env.Client.Create(b.Context(), welcomes[i]); err != nil {
			b.Fatalf("create welcome: %v", err)
		}
	}
	// One manager converges them: children created, Deployments reported available, Welcomes Ready.
	stop := startWelcomes(b, env, nil)
	for _, w := range welcomes {
		key := client.ObjectKeyFromObject(w)
		harness.WaitForObject(b, env.Client, key, &appsv1.Deployment{}, timeout, nil)
		optest.MarkDeploymentAvailable(b, env.Client, key)
	}
	for _, w := range welcomes {
		harness.WaitForObject(b, env.Client, client.ObjectKeyFromObject(w), &v1alpha1.Welcome{}, timeout, conditionsAre(ready))
	}
	stop()
	b.ResetTimer()
	var firstReconcile, lastReconcile time.Duration
	for b.Loop() {
		first, last := restart(b, env)
		firstReconcile += first
		lastReconcile += last
	}
	b.StopTimer()
	b.ReportMetric(float64(firstReconcile.Milliseconds())/float64(b.N), "ms-first")
	b.ReportMetric(float64(lastReconcile.Milliseconds())/float64(b.N), "ms-last")

	// A manager deletes them (the finalizer is its), so that later tests find none.
	defer startWelcomes(b, env, nil)()
	for _, w := range welcomes {
		if err := env.Client.Delete(b.Context(), w); err != nil {
			b.Fatalf("delete welcome: %v", err)
		}
	}
	for _, w := range welcomes {
		harness.WaitForDeletion(b, env.Client, w, timeout)
	}
}

// restart runs a new Welcome manager until it has reconciled restartWelcomes Welcomes without error,
// then stops it. It returns how long after the start the first reconcile began and the last ended.
func restart(b *testing.B, env *harness.Env) (first, last time.Duration) {
	b.Helper()
	var finished, firstAt atomic.Int64
	begin := time.Now()
	all := make(chan struct{})
	stop := startWelcomes(b, env, func(context.Context, ctrl.Request) func(ctrl.Result, error) {
		firstAt.CompareAndSwap(0, int64(time.Since(begin)))
		return func(_ ctrl.Result, err error) {
			if err == nil && finished.Add(1) == restartWelcomes {
				close(all)
			}
		}
	})
	defer stop()
	select {
	case <-all:
		return time.Duration(firstAt.Load()), time.Since(begin)
	case <-time.After(timeout):
		b.Fatalf("%d of %d Welcomes reconciled within %s", finished.Load(), restartWelcomes, timeout)
	}
	return 0, 0
}

// startWelcomes starts a Welcome manager as the example's main sets it up, with observe (if not nil)
// around each reconcile, and returns the function that stops it.
func startWelcomes(b *testing.B, env *harness.Env, observe func(context.Context, ctrl.Request) func(ctrl.Result, error)) (stop func()) {
	b.Helper()
	opts := manager.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 logr.Discard(),
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}
	if observe != nil {
		opts.BaseContext = func() context.Context { return reconcile.ContextWithObserver(context.Background(), observe) }
	}
	controller.CacheOptions(&opts.Cache)
	mgr, err := manager.New(env.Config, opts)
	if err != nil {
		b.Fatalf("create manager: %v", err)
	}
	if err := controller.SetupWithManager(mgr); err != nil {
		b.Fatalf("set up: %v", err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("manager: %v", err)
		}
	}
}
