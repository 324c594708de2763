package sharding

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
)

// arcShares returns the exact share of the hash circle each member of r owns: an object belongs to the
// member of the first point at or after its hash, so each point owns the arc from the point before it.
func arcShares(r *Ring) map[string]float64 {
	total := new(big.Float).SetInt(new(big.Int).Lsh(big.NewInt(1), 64))
	arcs := map[string]*big.Int{}
	for i, p := range r.points {
		prev := r.points[(i+len(r.points)-1)%len(r.points)].hash
		arc := new(big.Int).SetUint64(p.hash - prev) // wraps for the first point: the arc over zero
		if arcs[p.member] == nil {
			arcs[p.member] = new(big.Int)
		}
		arcs[p.member].Add(arcs[p.member], arc)
	}
	out := map[string]float64{}
	for m, a := range arcs {
		out[m], _ = new(big.Float).Quo(new(big.Float).SetInt(a), total).Float64()
	}
	return out
}

// TestRingBalanceIsBounded: over many rings of 2 to 10 members with random names (pod names, random
// strings, numbered), every member owns within ±10% of its share of the hash circle (so of the objects,
// whose UIDs are random) with the default virtual nodes.
func TestRingBalanceIsBounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []func(i int) string{
		func(i int) string { return fmt.Sprintf("welcome-%d", i) },
		func(i int) string { return fmt.Sprintf("shard-%c", 'a'+i) },
		func(int) string { return fmt.Sprintf("%08x", rng.Uint32()) },
		func(int) string { return fmt.Sprintf("operator-%x-%x", rng.Uint32(), rng.Uint32()) },
	}
	worst := 0.0
	for round := range 300 {
		n := 2 + round%9
		var members []string
		for i := range n {
			members = append(members, names[round%len(names)](i))
		}
		r := NewRing(members)
		for m, share := range arcShares(r) {
			dev := share*float64(n) - 1
			worst = max(worst, dev, -dev)
			if dev > 0.1 || dev < -0.1 {
				t.Errorf("ring %v: %s owns %.4f of the circle, %.1f%% from its share 1/%d", members, m, share, 100*dev, n)
			}
		}
	}
	t.Logf("worst deviation from a member's share: %.2f%%", 100*worst)
}
