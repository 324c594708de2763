// Package member holds the member clusters a hub operator places children in: a Set of named
// controller-runtime clusters (cluster.Cluster: a cache, a client, a REST mapper), which may change
// while the manager runs. A Reconciler given the Set (reconcile.WithMemberClusters) applies the graph
// nodes placed with Node.InCluster through each member's client, reads them from each member's cache,
// and is woken by their changes there.
//
//	members := member.NewSet(mgr)
//	c, err := cluster.New(memberConfig, func(o *cluster.Options) {
//		o.Scheme = mgr.GetScheme()
//		childcache.Configure(&o.Cache, &corev1.ConfigMap{}, &appsv1.Deployment{}) // only our children
//	})
//	err = members.Add("eu-1", c)
//	r := reconcile.NewReconciler(mgr, hooks, reconcile.WithMemberClusters(members))
//
// FromSecrets keeps a Set in step with kubeconfig Secrets in the hub, the way Argo CD, Flux and
// Cluster API name their clusters.
package member
