package wait

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	cases := map[string]struct {
		ctx  context.Context
		d    time.Duration
		want error
	}{
		"waits":                {ctx: t.Context(), d: time.Millisecond, want: nil},
		"zero checks ctx":      {ctx: t.Context(), d: 0, want: nil},
		"ended ctx, zero":      {ctx: cancelled, d: 0, want: context.Canceled},
		"ended ctx, long wait": {ctx: cancelled, d: time.Hour, want: context.Canceled},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Sleep(tc.ctx, tc.d); !errors.Is(got, tc.want) {
				t.Errorf("Sleep = %v, want %v", got, tc.want)
			}
		})
	}
}
