package lockcore

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Why a Keeper cancelled the work; context.Cause of the work's context is one of these.
var (
	// ErrLeaseLost: the lease could no longer be proven (renewal refused, or
	// renewals failing until deadline − cancel margin).
	ErrLeaseLost = errors.New("lost")
	// ErrBoundReached: the renewal bound was reached; renewals stop.
	ErrBoundReached = errors.New("bound")
	// ErrBudgetExceeded: the execution budget ended.
	ErrBudgetExceeded = errors.New("budget")
)

// KeeperOptions configure a Keeper. Zero durations are read from the Lease.
type KeeperOptions struct {
	// Lease is the policy's lease for this task (RenewEvery, RenewBound, Budget).
	Lease Lease
	// RetryEvery is the pause between retries of a failed renewal while the
	// lease is still provable; zero means min(RenewEvery/4, 500ms).
	RetryEvery time.Duration
	// OnRenew, if set, is called after every renewal attempt with its error (nil on success).
	OnRenew func(err error)
	// StopAhead moves the "lease can no longer be proven" cancel earlier by
	// this much: the work is cancelled at ValidUntil − StopAhead, so a worker
	// given StopAhead to wind down (lockctl run's --grace before SIGKILL) is
	// gone by ValidUntil, before the lease could pass to another holder. Zero
	// cancels at ValidUntil. Renewal calls are bounded by the same instant.
	StopAhead time.Duration
}

// Keeper renews a lock on the policy's schedule and cancels the work's
// context when the lease can no longer be proven (ErrLeaseLost), the renewal
// bound is reached (ErrBoundReached) or the budget ends (ErrBudgetExceeded).
// The proof is local and monotonic: the send time of the last successful
// acquire/renew + lease − CancelMargin (Redis docs, Redlock drift allowance).
// A renewal call runs beside the timers, so a call that hangs (a paused or
// partitioned server, a client that ignores context deadlines) cannot delay
// the cancel.
type Keeper struct {
	lock   *Lock
	opts   KeeperOptions
	cancel context.CancelCauseFunc
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	mu     sync.Mutex // guards lock.AcquiredAt while the renewer runs
}

// Keep starts a Keeper for lock and returns the context the work must run
// under; context.Cause(ctx) says why it was cancelled. Stop the Keeper with
// Stop before releasing the lock. The lock must not be renewed elsewhere.
func Keep(parent context.Context, lock *Lock, opts KeeperOptions) (context.Context, *Keeper) {
	ctx, cancel := context.WithCancelCause(parent)
	if opts.RetryEvery <= 0 {
		opts.RetryEvery = min(max(opts.Lease.RenewEvery/4, time.Millisecond), 500*time.Millisecond)
	}
	k := &Keeper{lock: lock, opts: opts, cancel: cancel, stop: make(chan struct{}), done: make(chan struct{})}
	go k.loop(ctx)
	return ctx, k
}

// Stop ends renewals and waits for the renewer to exit; a renewal call still
// in flight is cancelled and its result discarded. It does not release the
// lock and is safe to call more than once.
func (k *Keeper) Stop() {
	k.once.Do(func() { close(k.stop) })
	<-k.done
}

// ValidUntil is the lock's ValidUntil as of the last successful renewal,
// safe to call while the renewer runs.
func (k *Keeper) ValidUntil() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lock.ValidUntil()
}

// Done is closed when the renewer has exited.
func (k *Keeper) Done() <-chan struct{} { return k.done }

func (k *Keeper) loop(ctx context.Context) {
	defer close(k.done)
	start := k.lock.AcquiredAt
	l := k.opts.Lease
	// Budget and bound are measured from the first acquire.
	var budgetEnd, boundEnd <-chan time.Time
	if l.Budget > 0 {
		t := time.NewTimer(time.Until(start.Add(l.Budget)))
		defer t.Stop()
		budgetEnd = t.C
	}
	if l.Renewable && l.RenewBound > 0 {
		t := time.NewTimer(time.Until(start.Add(l.RenewBound)))
		defer t.Stop()
		boundEnd = t.C
	}
	// stopAt is when the work must be cancelled unless a renewal succeeds first.
	stopAt := func() time.Time { return k.lock.ValidUntil().Add(-k.opts.StopAhead) }
	lost := time.NewTimer(time.Until(stopAt()))
	defer lost.Stop()
	var renew <-chan time.Time
	next := time.NewTimer(0)
	defer next.Stop()
	if l.Renewable {
		next.Reset(time.Until(k.lock.AcquiredAt.Add(l.RenewEvery)))
		renew = next.C
	} else {
		next.Stop()
	}
	// At most one renewal is in flight; its result comes back on inflight.
	var inflight chan renewResult
	rcancel := context.CancelFunc(func() {})
	defer func() { rcancel() }()
	for {
		select {
		case <-k.stop:
			k.cancel(context.Canceled)
			return
		case <-ctx.Done():
			return
		case <-budgetEnd:
			k.cancel(ErrBudgetExceeded)
			return
		case <-boundEnd:
			k.cancel(ErrBoundReached)
			return
		case <-lost.C:
			if !l.Renewable && l.Budget > 0 && l.Budget <= l.Lease {
				// A fixed lease is the budget: its end is the budget's end.
				k.cancel(ErrBudgetExceeded)
			} else {
				k.cancel(ErrLeaseLost)
			}
			return
		case <-renew:
			inflight, rcancel = k.startRenew(ctx, stopAt())
		case r := <-inflight:
			inflight = nil
			rcancel()
			err := r.err
			if err == nil {
				k.mu.Lock()
				k.lock.AcquiredAt = r.sent
				k.mu.Unlock()
			}
			if k.opts.OnRenew != nil {
				k.opts.OnRenew(err)
			}
			switch {
			case err == nil:
				lost.Reset(time.Until(stopAt()))
				next.Reset(time.Until(k.lock.AcquiredAt.Add(l.RenewEvery)))
			case errors.Is(err, ErrNotHeld):
				k.cancel(ErrLeaseLost)
				return
			default:
				// Transient: retry while the lease may still be valid; the lost timer decides.
				next.Reset(k.opts.RetryEvery)
			}
		}
	}
}

// startRenew sends one renewal, bounded by deadline, from its own goroutine;
// the result arrives on the returned channel.
func (k *Keeper) startRenew(ctx context.Context, deadline time.Time) (chan renewResult, context.CancelFunc) {
	rctx, cancel := context.WithDeadline(ctx, deadline)
	ch := make(chan renewResult, 1)
	go func() {
		sent, err := k.lock.renew(rctx)
		ch <- renewResult{sent, err}
	}()
	return ch, cancel
}

// renewResult is one renewal call's outcome: when it was sent and its error.
type renewResult struct {
	sent time.Time
	err  error
}
