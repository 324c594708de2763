package sharding_test

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/convergo-dev/convergo/sharding"
)

// A third replica joins a ring of two: only objects the new ring gives it move, and they come from
// both old members.
func ExampleRing() {
	before := sharding.NewRing([]string{"welcome-0", "welcome-1"})
	after := sharding.NewRing([]string{"welcome-0", "welcome-1", "welcome-2"})
	moved, between := 0, 0
	for i := range 3000 {
		uid := types.UID(fmt.Sprintf("uid-%d", i))
		from, to := before.Owner(uid), after.Owner(uid)
		switch {
		case from == to:
		case to == "welcome-2":
			moved++
		default:
			between++
		}
	}
	fmt.Println("moved to the new member: about a third:", moved > 800 && moved < 1200)
	fmt.Println("moved between the old members:", between)
	// Output:
	// moved to the new member: about a third: true
	// moved between the old members: 0
}

// A replica's caches select its share: the sharded kind and its children by the member's label
// (combined with a selector already set, such as childcache.Configure's), the Leases by the ring.
func ExampleConfig_ScopeCache() {
	cfg := sharding.Config{Ring: "welcome", Member: "welcome-1", Namespace: "welcome-system"}
	opts := cache.Options{}
	cfg.ScopeCache(&opts, &corev1.ConfigMap{})
	for obj, by := range opts.ByObject {
		fmt.Printf("%T: %s %v\n", obj, by.Label, slices.Collect(maps.Keys(by.Namespaces)))
	}
	// Unordered output:
	// *v1.ConfigMap: shard.convergo.dev/welcome=welcome-1 []
	// *v1.Lease: sharding.convergo.dev/ring=welcome [welcome-system]
}
