package marks

// The owner marks (package ownership). Every child carries OwnerUID; the other four name the owner on
// children whose owner references cannot (cluster-scoped children of namespaced owners, children in
// other namespaces).
const (
	// OwnerUID, a label, holds the owner's UID. It selects an owner's children.
	OwnerUID = "convergo.dev/owner-uid"
	// OwnerKind, a label, holds the owner's kind.
	OwnerKind = "convergo.dev/owner-kind"
	// OwnerGroup, a label, holds the owner's API group; absent for the core group.
	OwnerGroup = "convergo.dev/owner-group"
	// OwnerName, an annotation, holds the owner's name.
	OwnerName = "convergo.dev/owner-name"
	// OwnerNamespace, an annotation, holds the owner's namespace; absent for cluster-scoped owners.
	OwnerNamespace = "convergo.dev/owner-namespace"
)

// The graph's marks (package graph): on each child, its node and the nodes it depends on, so that
// the order can be shown from live objects (kubectl convergo tree) and followed without the graph
// (Graph.DeleteByMarks). They are part of the child's intent: they change only when the graph's shape
// does.
const (
	// Node, an annotation, holds the name of the child's node in its owner's Graph (the name given to
	// Graph.Add).
	Node = "convergo.dev/node"
	// DependsOn, an annotation, holds the names of the nodes the child's node depends on (DependsOn
	// and DependsOnForCreation), sorted and separated by commas; it is absent for a node without
	// dependencies. Node names that contain a comma read as two names here.
	DependsOn = "convergo.dev/depends-on"
	// External, an annotation on an owner, records the external objects its graph created or
	// adopted, as a JSON list of {"node", "kind", "id", "keep", "dependsOn"} (keep only when true,
	// dependsOn only when the node has dependencies): the identity of each is written there before the
	// object is created, so it survives a crash, a restart and a spec change, and pruning and deletion
	// find every object the owner may hold outside the cluster. The graph removes an entry once its
	// object is confirmed gone (or released); do not edit it by hand.
	External = "convergo.dev/external"
)

// The deletion policy (package apply): an annotation on a child, and its values.
const (
	// DeletionPolicy holds how the child goes when its owner is deleted or it is pruned
	// (apply.DeletionPolicyAnnotation).
	DeletionPolicy = "convergo.dev/deletion-policy"
	// PolicyKeep keeps the child (released instead of deleted).
	PolicyKeep = "keep"
	// PolicyForeground deletes the child with foreground propagation.
	PolicyForeground = "foreground"
	// PolicyBackground deletes the child with background propagation, as without the annotation.
	PolicyBackground = "background"
)
