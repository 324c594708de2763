package telemetry

import "context"

// WrittenForAnnotation is the annotation on each child the Applier writes while a Reconciler's
// reconcile runs: that reconcile's trigger ("changed", "child ConfigMap demo/alice", ...). It goes
// only into writes that happen anyway and is not part of the child's intent, so it never causes a
// write; `kubectl convergo tree` shows it beside the time of the write.
const WrittenForAnnotation = "convergo.dev/written-for"

type triggerKey struct{}

// WithTrigger returns ctx carrying why its reconcile runs, for WrittenForAnnotation.
func WithTrigger(ctx context.Context, why string) context.Context {
	return context.WithValue(ctx, triggerKey{}, why)
}

// Trigger returns what WithTrigger put into ctx, "" when nothing did (the Applier used on its own).
func Trigger(ctx context.Context) string {
	why, _ := ctx.Value(triggerKey{}).(string)
	return why
}
