package inspect

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Bounds of Reader.RecheckSubsecond's re-reads.
const (
	// recheckEvery is the time between re-reads of PTTL and the value.
	recheckEvery = 50 * time.Millisecond
	// recheckMax bounds the wait: a key with under 1s left is renewed,
	// released or expired within it.
	recheckMax = 1100 * time.Millisecond
)

// recheckSubsecond re-reads, every recheckEvery for up to recheckMax, the
// keys read with under 1s left and OBJECT IDLETIME 0, and marks
// Value.RenewedPastSecond on those whose same value was renewed to 1s or
// more: a healthy lease near its end, not one set under 1s. The idle time
// alone cannot tell them apart: any read (a watch, another inspect) resets
// it, and Redis 7.0 has no CLIENT NO-TOUCH. Read-only (PTTL, GETRANGE);
// it returns the client's error.
func (r *Reader) recheckSubsecond(ctx context.Context, c redis.Cmdable, keys []string, vals []Value) error {
	var pending []int
	for i, v := range vals {
		if v.PTTL >= 0 && v.PTTL < 1000 && v.Idle != nil && *v.Idle == 0 {
			pending = append(pending, i)
		}
	}
	deadline := time.Now().Add(recheckMax)
	for len(pending) > 0 && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(recheckEvery):
		}
		pipe := c.Pipeline()
		pttls := make([]*redis.Cmd, len(pending))
		gets := make([]*redis.Cmd, len(pending))
		for j, i := range pending {
			pttls[j] = pipe.Do(ctx, "pttl", keys[i])
			if vals[i].Type == "string" {
				gets[j] = pipe.Do(ctx, "getrange", keys[i], 0, r.maxBytes()-1)
			}
		}
		if err := execPipe(ctx, pipe); err != nil {
			return err
		}
		next := pending[:0]
		for j, i := range pending {
			pttl, err := pttls[j].Int64()
			if err != nil || pttl < 0 {
				continue // gone or unreadable: the lease ended as it was
			}
			if gets[j] != nil {
				if s, err := gets[j].Text(); err != nil || s != string(vals[i].Bytes) {
					continue // another holder: nothing more to learn of this lease
				}
			}
			if pttl >= 1000 {
				vals[i].RenewedPastSecond = true
				continue
			}
			next = append(next, i)
		}
		pending = next
	}
	return nil
}
