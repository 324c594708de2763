package sharding_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"

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
