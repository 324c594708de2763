//go:build integration

package bench

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/testing/harness"
)

// TestReceiver checks on the real API server that the receiver, the restart floor's manager, reads
// every Welcome of its namespace and its children's kinds, and writes nothing: its restart is only
// receiving.
func TestReceiver(t *testing.T) {
	env := harness.Default()
	ctx := t.Context()
	ns := env.Namespace(t)
	names := []string{"a", "b", "c"}
	for _, name := range names {
		if err := warmUpObjects(ctx, env, ns, name, map[string]string{"app.kubernetes.io/name": "receiver-test"}); err != nil {
			t.Fatal(err)
		}
	}
	base, err := reconcileCount()
	if err != nil {
		t.Fatal(err)
	}
	counter := harness.NewRequestCounter()
	env.StartManager(t, receiver.Setup,
		harness.WithManagerConfig(counter.Wrap(env.Config)),
		harness.WithManagerOptions(func(o *manager.Options) {
			o.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}}
			receiver.Cache(&o.Cache)
		}))

	var done int
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		n, err := reconcileCount()
		done = n - base
		return done >= len(names), err
	}); err != nil {
		t.Fatalf("the receiver reconciled %d of %d Welcomes: %v", done, len(names), err)
	}

	got := map[string][]string{}
	for _, r := range counter.Snapshot() {
		if r.Resource == "" {
			continue // discovery
		}
		what := r.Verb
		if r.IsWrite() {
			what = "write"
		}
		if !slices.Contains(got[what], r.FullResource()) {
			got[what] = append(got[what], r.FullResource())
		}
	}
	for _, resources := range got {
		slices.Sort(resources)
	}
	// The informers list (unless client-go streams the lists through its watches) and watch; nothing
	// else is asked, and nothing written.
	want := map[string][]string{"watch": {"configmaps", "deployments", "services", "welcomes"}}
	if _, ok := got["list"]; ok {
		want["list"] = want["watch"]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the receiver's requests by verb (-want +got):\n%s", diff)
	}
}
