// Command kubectl-convergo is a kubectl plugin for operators built with Convergo. Installed on the
// PATH, kubectl runs it as `kubectl convergo`:
//
//	go install github.com/convergo-dev/convergo/cmd/kubectl-convergo@latest
//	kubectl convergo tree welcome/alice -n demo
//
// `tree <resource>/<name>` (or `tree <resource> <name>`) shows a live object's Ready condition and
// its children in the order of its graph:
//
//	Welcome demo/alice: Ready=True (Reconciled) all 3 children ready
//	Last written 2026-12-06T10:05:00Z, by a reconcile for: changed
//	NODE        DEPENDS ON  KIND        NAME        READY  WRITTEN               FOR      CHECK                REASON
//	page                    ConfigMap   demo/alice  True   2026-12-06T10:05:00Z  changed  exists
//	service                 Service     demo/alice  True   2026-12-06T10:00:00Z  created  ServiceReady
//	deployment  page        Deployment  demo/alice  True   2026-12-06T10:05:00Z  -        DeploymentAvailable
//
// WRITTEN is the child's last server-side apply, from its managedFields (the operator writes children
// only by applying; -o json names the field manager too). FOR is why the reconcile that wrote it ran,
// from the annotation convergo.dev/written-for the Reconciler puts into each write it makes anyway:
// created, changed (the owner's spec, labels or annotations), child or watch and the object that
// changed, start-up, requeue, interval, external, poll, retry, shard. A Deployment carries none (the
// Deployment controller copies its annotations to its ReplicaSets, so each change would cost a
// write). The line above the table names the last write.
//
// The resource is a resource name as kubectl takes it (plural, singular or short, optionally with its
// group: welcomes.web.convergo.dev). The children are the objects of every kind the user may list
// that carry the owner's UID in the tracking label convergo.dev/owner-uid and the owner's name in the
// tracking annotation (package ownership; the endpoints controller copies a Service's labels, not its
// annotations, to its Endpoints and EndpointSlices), in any namespace and cluster-scoped: one
// metadata-only list per resource, then one read per match. Where the user may list a resource only in
// the object's namespace, it is listed there; the resources the user may not list or read are named in
// one warning on stderr. Their
// order comes from the annotations convergo.dev/node and convergo.dev/depends-on that
// graph.Graph.Apply writes: dependencies first, in layers, by node name within a layer. Children
// without them (applied by Applier.Apply alone, or not yet reconciled by a Convergo version that
// writes them) come last, marked <none>.
//
// The readiness checks of a graph are Go functions the plugin cannot run, so it judges each child
// by its kind, and names the check in the CHECK column: a Deployment by
// builders.DeploymentAvailable, a StatefulSet by builders.StatefulSetReady, a DaemonSet by its rollout
// (DaemonSetReady), a Job by builders.JobComplete, a Service by builders.ServiceReady; any other object
// with a Ready condition (Established for a CustomResourceDefinition, Available for an APIService) by
// builders.ConditionsReady; anything else is ready when it exists. A child being deleted is not ready.
//
// Children in member clusters (graph.Node.InCluster) carry the same tracking marks and graph
// annotations, and are found the same way in each member, then ordered with the others by the same
// annotations; a CLUSTER column then names the member of each child ("-" for the owner's own
// cluster), and -o json gives it as "cluster". The members are those the hub's Secrets labelled
// convergo.dev/member-cluster=NAME in the namespace of --member-secrets-namespace (convergo-system
// unless set; "" for none) name, each with a kubeconfig under the key kubeconfig (the convention of
// package member), and those of --member NAME=KUBECONFIG_PATH, which replaces a Secret naming the same
// member (the kubeconfig an operator uses may name an address only it reaches). A member that cannot
// be read or reached is a warning on stderr naming it, as are Secrets the user may not list; the tree
// shows what it found. Each request to a member times out after --request-timeout, or 20s.
//
//	NODE         DEPENDS ON  CLUSTER  KIND       NAME        READY  WRITTEN  FOR  CHECK   REASON
//	page                     -        ConfigMap  demo/alice  True   -        -    exists
//	config-east  page        east     ConfigMap  demo/alice  True   -        -    exists
//
// Objects outside the cluster that the owner's graph manages (external nodes) follow, as recorded in
// the owner's annotation convergo.dev/external: node, kind, identity and whether they are kept. Their
// state is the operator's to observe; the plugin does not reach their systems.
//
// Flags: -o json prints the same as JSON; --member-secrets-namespace and --member name the member
// clusters; --kubeconfig, --context, -n/--namespace and kubectl's other connection flags (--cluster,
// --user, --server, --token, --as...) work as in kubectl, for the hub.
package main
