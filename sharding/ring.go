package sharding

import (
	"cmp"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// DefaultVirtualNodes is how many points each member has on a Ring unless WithVirtualNodes says
// otherwise. With 4000, each of N members owns its share 1/N of the hash circle within ±10% (the
// deviation of a member's share is about 1.6%, so ±10% is six of them; TestRingBalanceIsBounded checks
// 300 rings of 2 to 10 members exactly): a ring of 10 members holds 40,000 points, about 1 MiB.
const DefaultVirtualNodes = 4000

// Ring assigns objects to members by consistent hashing of the object's UID (FNV-1a, 64 bits, mixed):
// each member has a number of points on a circle of hashes, and an
// object belongs to the member of the first point at or after its own hash. When a member joins it
// takes about 1/N of the objects, all from the others; nothing moves between the members that stay.
// A Ring is immutable: build a new one when the members change.
type Ring struct {
	points  []point
	members []string
}

type point struct {
	hash   uint64
	member string
}

// RingOption configures NewRing.
type RingOption func(*ringConfig)

type ringConfig struct{ vnodes int }

// WithVirtualNodes sets how many points each member has (default DefaultVirtualNodes). More points
// spread objects more evenly and cost memory per member.
func WithVirtualNodes(n int) RingOption {
	return func(c *ringConfig) {
		if n > 0 {
			c.vnodes = n
		}
	}
}

// NewRing returns the ring of members (duplicates and empty names are ignored; order does not matter).
func NewRing(members []string, opts ...RingOption) *Ring {
	cfg := ringConfig{vnodes: DefaultVirtualNodes}
	for _, o := range opts {
		o(&cfg)
	}
	r := &Ring{}
	for _, m := range members {
		if m != "" && !slices.Contains(r.members, m) {
			r.members = append(r.members, m)
		}
	}
	slices.Sort(r.members)
	r.points = make([]point, 0, len(r.members)*cfg.vnodes)
	for _, m := range r.members {
		for i := range cfg.vnodes {
			r.points = append(r.points, point{hash: hashString(m + "#" + strconv.Itoa(i)), member: m})
		}
	}
	// Ties (astronomically rare) go to the smaller name, so that every replica computes the same ring.
	slices.SortFunc(r.points, func(a, b point) int {
		return cmp.Or(cmp.Compare(a.hash, b.hash), strings.Compare(a.member, b.member))
	})
	return r
}

// Members returns the ring's members, sorted.
func (r *Ring) Members() []string { return slices.Clone(r.members) }

// Owner returns the member that owns the object with uid, or "" when the ring has no member.
func (r *Ring) Owner(uid types.UID) string {
	if len(r.points) == 0 {
		return ""
	}
	h := hashString(string(uid))
	i, _ := slices.BinarySearchFunc(r.points, h, func(p point, h uint64) int { return cmp.Compare(p.hash, h) })
	if i == len(r.points) {
		i = 0 // past the last point: the circle wraps to the first
	}
	return r.points[i].member
}

// hashString is FNV-1a, 64 bits, followed by MurmurHash3's 64-bit finalizer: FNV alone spreads short,
// similar strings ("welcome-0#1", "welcome-0#2") poorly over the high bits the ring orders by.
func hashString(s string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}
