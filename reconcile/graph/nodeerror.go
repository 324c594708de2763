package graph

// The steps a NodeError names.
const (
	// StepObserve: reading an external object (External.Observe).
	StepObserve = "observe"
	// StepApply: creating or updating a node (a child's server-side apply, an external's Apply and the
	// record of its identity on the owner).
	StepApply = "apply"
	// StepDelete: deleting a node.
	StepDelete = "delete"
)

// NodeError is the error of one node's step, as Apply and Delete return it (joined with others when
// several nodes fail). A caller branches on it with errors.As to say which node and step failed; the
// Reconciler turns it into the condition reasons ObserveFailed, ApplyFailed and DeleteFailed.
type NodeError struct {
	Node string // the node's name
	Step string // StepObserve, StepApply or StepDelete
	Err  error  // the error, its message naming the node
}

func (e *NodeError) Error() string { return e.Err.Error() }

// Unwrap returns the step's error.
func (e *NodeError) Unwrap() error { return e.Err }

// nodeError wraps err, already naming the node, as the error of node's step.
func nodeError(node, step string, err error) error {
	return &NodeError{Node: node, Step: step, Err: err}
}
