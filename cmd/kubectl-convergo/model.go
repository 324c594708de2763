package main

import "time"

// Tree is what `kubectl convergo tree` shows: an object and its children in graph order.
type Tree struct {
	// Owner is the object asked for.
	Owner Owner `json:"owner"`
	// Children are its tracked children in graph order (see inGraphOrder).
	Children []Child `json:"children"`
	// External are the objects outside the cluster its graph records on it (annotation
	// convergo.dev/external), in the order recorded. Their state is the operator's to observe.
	External []External `json:"external,omitempty"`
}

// External is one object outside the cluster recorded on the owner.
type External struct {
	// Node is the node that declared it.
	Node string `json:"node"`
	// Kind is the kind its operator gave it, such as postgres.database.
	Kind string `json:"kind"`
	// ID is its identity in its system.
	ID string `json:"id"`
	// Keep is true when it is kept (released, not deleted) when the owner goes.
	Keep bool `json:"keep,omitempty"`
}

// Owner is the object whose children are shown.
type Owner struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	// Ready is the owner's Ready condition, nil when it has none.
	Ready *Condition `json:"ready,omitempty"`
}

// Condition is the part of a status condition the tree shows.
type Condition struct {
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Child is one tracked child of the owner.
type Child struct {
	// Node is the child's node in the owner's graph (annotation convergo.dev/node); empty when the
	// child does not record it.
	Node string `json:"node,omitempty"`
	// DependsOn names the nodes the child's node depends on (annotation convergo.dev/depends-on).
	DependsOn []string `json:"dependsOn,omitempty"`
	// Cluster is the member cluster the child is in (a graph node's InCluster), by the name its
	// Secret's label convergo.dev/member-cluster or --member gives it; empty in the owner's cluster.
	Cluster    string `json:"cluster,omitempty"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// Ready is the verdict of Check.
	Ready bool `json:"ready"`
	// Check names the rule that judged readiness: a builders function (DeploymentAvailable...),
	// DaemonSetReady, "deleting" for a child being deleted, or "exists".
	Check string `json:"check"`
	// Reason says why the child is not ready.
	Reason string `json:"reason,omitempty"`
	// Written is the child's last server-side apply (Convergo writes only by applying), from its
	// managedFields; nil when none is recorded.
	Written *Write `json:"written,omitempty"`
	// WrittenFor is the trigger of the reconcile that last wrote the child (annotation
	// convergo.dev/written-for): "changed", "child ConfigMap demo/alice", ...; empty when not recorded.
	WrittenFor string `json:"writtenFor,omitempty"`
}

// Write is a field manager's last write of an object.
type Write struct {
	Manager string    `json:"manager"`
	Time    time.Time `json:"time"`
}

// namespacedName is "namespace/name", or the name of a cluster-scoped object.
func namespacedName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
