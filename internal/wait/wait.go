// Package wait holds the context-aware pause the library's retry loops share.
//
//	if err := wait.Sleep(ctx, backoff<<attempt); err != nil {
//		return err // the context ended first
//	}
package wait

import (
	"context"
	"time"
)

// Sleep waits for d, or returns ctx.Err() as soon as ctx ends. A d of zero or less only checks ctx.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
