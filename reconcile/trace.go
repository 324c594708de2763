package reconcile

import (
	"context"
	"time"

	"github.com/convergo-dev/convergo/finalizer"
	"github.com/convergo-dev/convergo/internal/telemetry"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	ctrl "sigs.k8s.io/controller-runtime"
)

// tracerName names the tracer of the Reconciler's spans.
const tracerName = "github.com/convergo-dev/convergo/reconcile"

// Span attributes of a reconcile.
const (
	attrController = attribute.Key("convergo.controller")
	attrGroup      = attribute.Key("k8s.object.group")
	attrKind       = attribute.Key("k8s.object.kind")
	attrNamespace  = attribute.Key("k8s.namespace.name")
	attrName       = attribute.Key("k8s.object.name")
	attrGeneration = attribute.Key("k8s.object.generation")
	attrTrigger    = attribute.Key("convergo.trigger")
	attrTriggerBy  = attribute.Key("convergo.trigger.object")
	attrResult     = attribute.Key("convergo.result")
	attrRequeue    = attribute.Key("convergo.requeue_after")
)

// WithTracerProvider sets the OpenTelemetry tracer provider of the Reconciler's spans. Default:
// OpenTelemetry's global provider (otel.GetTracerProvider), which records nothing until the program
// sets one (otel.SetTracerProvider), so tracing is off unless the operator turns it on; the library
// chooses no exporter.
//
// Each reconcile is one span named for the controller, with the object (k8s.object.group, .kind,
// .name, .generation, k8s.namespace.name), why it ran (convergo.trigger: start-up, created, changed,
// child, watch, shard, requeue, external, interval, poll, retry; convergo.trigger.object names the
// child or watched object) and its outcome (convergo.result). Under it: a span per graph node ("apply
// <node>" with convergo.operation, convergo.ready and, when the child drifted, convergo.drift, the first
// difference; "delete <node>"; "prune"), per call to an external system ("<kind> observe", "apply",
// "delete", "release"), the status patch and the finalizer. The hooks receive the reconcile's context:
// spans the author starts there nest under it, and so do the API requests of a client whose
// rest.Config is wrapped with an OpenTelemetry transport (rest.Config.Wrap; see the Welcome example).
func WithTracerProvider(tp trace.TracerProvider) ReconcilerOption {
	return func(c *reconcilerConfig) { c.tracerProvider = tp }
}

// tracerOf returns the tracer of tp, or of the global provider when tp is nil.
func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(tracerName)
}

// startReconcile starts the span of the reconcile of req, which runs because of tr.
func (r *Reconciler[T]) startReconcile(ctx context.Context, req ctrl.Request, tr trigger) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{
		attrController.String(r.name), attrGroup.String(r.gvk.Group), attrKind.String(r.gvk.Kind),
		attrNamespace.String(req.Namespace), attrName.String(req.Name), attrTrigger.String(tr.why),
	}
	if tr.detail != "" {
		attrs = append(attrs, attrTriggerBy.String(tr.detail))
	}
	return r.tracer.Start(telemetry.WithTrigger(ctx, tr.why, tr.detail), r.name, trace.WithAttributes(attrs...))
}

// endReconcile records the reconcile's end on its span, in the trigger counter and in its log line.
func (r *Reconciler[T]) endReconcile(ctx context.Context, span trace.Span, tr trigger, began time.Time, res ctrl.Result, err error) {
	if res.RequeueAfter > 0 {
		span.SetAttributes(attrRequeue.String(res.RequeueAfter.String()))
	}
	telemetry.EndSpan(span, err)
	r.metrics.trigger(tr.why)
	log := loggerOf(ctx).WithValues("trigger", tr.why, "duration", time.Since(began).Round(time.Microsecond).String())
	if tr.detail != "" {
		log = log.WithValues("triggeredBy", tr.detail)
	}
	if res.RequeueAfter > 0 {
		log = log.WithValues("requeueAfter", res.RequeueAfter.String())
	}
	log.V(1).Info("reconciled", "error", err != nil)
}

// result counts a reconcile's outcome and records it on its span.
func (r *Reconciler[T]) result(ctx context.Context, result string) {
	r.metrics.result(result)
	trace.SpanFromContext(ctx).SetAttributes(attrResult.String(result))
}

// span starts a span of a step of the reconcile (the status patch, the finalizer).
func span(ctx context.Context, name string) (context.Context, trace.Span) {
	return telemetry.StartSpan(ctx, tracerName, name)
}

// ensureFinalizer adds the finalizer when missing (no request when present), in a span.
func (r *Reconciler[T]) ensureFinalizer(ctx context.Context, obj T) error {
	ctx, sp := span(ctx, "finalizer")
	added, err := finalizer.Ensure(ctx, r.client, obj, r.finalizer, finalizer.WithAPIReader(r.apiReader))
	sp.SetAttributes(attribute.Bool("convergo.added", added))
	telemetry.EndSpan(sp, err)
	return err
}
