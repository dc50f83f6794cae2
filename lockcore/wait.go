package lockcore

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Backoff is the pause between acquire attempts while waiting for a held
// lock: exponential from Min to Max, each pause drawn uniformly from
// [d/2, d] ("equal jitter", AWS Architecture Blog 2015, "Exponential Backoff
// And Jitter") so waiters started together do not retry in step.
type Backoff struct {
	Min, Max time.Duration
}

// DefaultBackoff pauses 10 ms, 20 ms, ... up to 1 s between attempts.
var DefaultBackoff = Backoff{Min: 10 * time.Millisecond, Max: time.Second}

// Delay returns the jittered pause before retry number attempt (0-based).
func (b Backoff) Delay(attempt int) time.Duration {
	d := b.Min
	for i := 0; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// AcquireWait is Acquire retried while the lock is held, for up to wait
// (zero: one attempt). Pauses follow b and never exceed the holder's
// remaining TTL or the time left to wait. It returns the last *HeldError
// (errors.Is ErrNotObtained) when the wait runs out, ctx's error when ctx
// ends, or the client's error at once.
func (lk *Locker) AcquireWait(ctx context.Context, keys Keys, lease, wait time.Duration, b Backoff) (*Lock, error) {
	deadline := time.Now().Add(wait)
	for attempt := 0; ; attempt++ {
		l, err := lk.Acquire(ctx, keys, lease)
		var held *HeldError
		if err == nil || !errors.As(err, &held) {
			return l, err
		}
		pause := b.Delay(attempt)
		if held.PTTL > 0 {
			pause = min(pause, held.PTTL)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, err
		}
		t := time.NewTimer(min(pause, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}
