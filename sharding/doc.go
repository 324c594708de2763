// Package sharding is the foundation of active-active operators: replicas that each reconcile a share
// of the objects, coordinated through Kubernetes itself (Leases and labels), with no external store and
// no webhook.
//
// A Member holds one replica's Lease in a ring, renews it, tells the replica's writers whether they may
// still write (CanWrite turns false before any other replica may take over), observes which members are
// live by its own clock, and fences a member whose Lease expired (one survivor wins, by resourceVersion).
// A Ring assigns each object to a live member by consistent hashing of its UID: a member joining takes
// about 1/N of the objects, all from the others, and nothing moves between the members that stay.
//
//	member := sharding.NewMember(mgr.GetClient(), "welcome", os.Getenv("POD_NAME"), namespace)
//	if err := mgr.Add(member); err != nil { // renews until the manager stops, then releases
//		return err
//	}
//	live, expired, err := member.Observe(ctx)
//	ring := sharding.NewRing(live)
//	mine := ring.Owner(obj.GetUID()) == member.Name()
//
// Not built yet (issue #15): the Reconciler option that labels objects and children with their shard,
// scopes the caches to it, claims new objects, hands objects over on joins and takes them over after
// a fence.
package sharding
