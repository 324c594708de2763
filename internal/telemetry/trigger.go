package telemetry

import "context"

// WrittenForAnnotation is the annotation on each child the Applier writes while a Reconciler's
// reconcile runs: that reconcile's trigger ("changed", "child ConfigMap demo/alice", ...). It goes
// only into writes that happen anyway and is not part of the child's intent, so it never causes a
// write; `kubectl convergo tree` shows it beside the time of the write. Deployments do not carry it
// (see apply's writtenFor).
const WrittenForAnnotation = "convergo.dev/written-for"

type triggerKey struct{}

// trigger is why a reconcile runs and, for a child or a watch, which object ("ConfigMap ns/name").
type trigger struct{ why, object string }

// WithTrigger returns ctx carrying why its reconcile runs and the object that brought it ("" when
// none did).
func WithTrigger(ctx context.Context, why, object string) context.Context {
	return context.WithValue(ctx, triggerKey{}, trigger{why, object})
}

// Trigger returns what WithTrigger put into ctx, "" when nothing did (the Applier used on its own).
func Trigger(ctx context.Context) (why, object string) {
	tr, _ := ctx.Value(triggerKey{}).(trigger)
	return tr.why, tr.object
}

// WrittenFor returns the value of WrittenForAnnotation for a write under ctx: the trigger and its
// object, "" without a trigger.
func WrittenFor(ctx context.Context) string {
	why, object := Trigger(ctx)
	if object == "" {
		return why
	}
	return why + " " + object
}
