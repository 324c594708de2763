// Package telemetry holds what the library's packages share to trace and measure.
//
//	ctx, span := tracer.Start(ctx, "status patch")
//	err := patch(ctx)
//	telemetry.EndSpan(span, err)
package telemetry
