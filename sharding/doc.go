// Package sharding runs several active replicas of one operator, each reconciling its share of the
// objects, coordinated through Kubernetes itself (a Lease per replica, a label per object,
// label-selected caches), with no external store and no webhook. docs/sharding.md says when to shard,
// how it works, what it costs and how to roll out and back.
//
// A Shard is one replica's share: added to the manager, it holds the replica's Lease (a Member),
// fences members whose Lease expired, claims objects nobody owns (new ones, those of a member that
// is gone, bogus labels) with resourceVersion-guarded patches, and tells the Reconciler which of its
// objects the Ring (consistent hashing of the UID over the live members) now gives to another member;
// reconcile.WithSharding hands them over between two reconciles, labels children with their owner's
// member, relabels the children of an object that moved in (read from the API server), and sends
// every write through the shard's guard, which refuses once the Lease was not renewed within the
// renew deadline. Config.ScopeCache scopes the manager's caches to the replica's share.
//
//	shardCfg := sharding.Config{Ring: "welcome", Member: os.Getenv("POD_NAME"), Namespace: os.Getenv("POD_NAMESPACE")}
//	opts := ctrl.Options{Scheme: scheme}
//	shardCfg.ScopeCache(&opts.Cache, &v1alpha1.Welcome{}, &corev1.ConfigMap{})
//	mgr, err := ctrl.NewManager(cfg, opts)
//	shard, err := sharding.Join(mgr, shardCfg, &v1alpha1.Welcome{}) // NewShard, then mgr.Add
//	r := reconcile.NewReconciler(mgr, hooks, reconcile.WithSharding(shard), reconcile.WithOwns(&corev1.ConfigMap{}))
package sharding
