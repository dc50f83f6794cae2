package simulate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/lockctl/lockctl/history"
	"github.com/lockctl/lockctl/lockcore"
)

func (r *liveRun) acquire(a *liveActor, client partClient, st Step) error {
	r.mu.Lock()
	holding := a.inSection
	r.mu.Unlock()
	if holding {
		r.event(a.name, "acquire", false, 0, "skipped: "+a.name+" already holds the lock")
		return nil
	}
	locker := lockcore.NewLocker(client)
	lease := r.dur(r.p.lease)
	began := time.Now()
	deadline := began.Add(r.dur(st.WaitMS))
	retry := max(lease/100, time.Millisecond)
	for first := true; ; {
		// As in the model, a crashed process stops waiting and a paused
		// one is not served until it wakes.
		r.mu.Lock()
		crashed, pausedUntil := a.crashed, a.pausedUntil
		r.mu.Unlock()
		if crashed {
			return nil
		}
		if time.Now().Before(pausedUntil) {
			if !r.sleepUntil(pausedUntil) {
				return r.ctx.Err()
			}
			continue
		}
		// A waiter is served last at an instant, as in the model: after
		// everything else due by now (real now: a little later than the
		// model's, by the jitter, so what is due at the instant is in), and
		// after the waiters before it in the model's order.
		if !first && !r.await(deadline, func() bool {
			return time.Now().After(deadline) || !r.aheadLocked(a, time.Now(), math.MaxInt) && !r.waiterBeforeLocked(a)
		}) {
			return r.ctx.Err()
		}
		sent := time.Now()
		lock, err := locker.Acquire(r.ctx, r.keys, lease)
		r.locked(func() { a.blocking = false })
		switch {
		case err == nil:
			r.locked(func() { a.waiting = false })
			r.granted(a, lock, sent, first)
			return nil
		case errors.Is(err, lockcore.ErrNotObtained), errors.Is(err, errPartitioned):
			// As in the model: the first refusal, and giving up.
			switch {
			case st.WaitMS == 0:
				r.event(a.name, "acquire", false, 0, r.refusal(err))
				return nil
			case time.Now().After(deadline):
				r.locked(func() { a.waiting = false })
				r.event(a.name, "acquire", false, 0, "gave up after waiting "+fmtMS(r.virtual(time.Now())-r.virtual(began)))
				return nil
			case first:
				r.event(a.name, "acquire", false, 0, r.refusal(err)+"; retrying for up to "+fmtMS(st.WaitMS))
			}
			first = false
			r.locked(func() { a.waiting = true })
			// Waiting, as in the model: faults due now need not wait for it.
			r.locked(func() { a.blocking = true })
			if !r.sleepUntil(time.Now().Add(retry)) {
				return r.ctx.Err()
			}
		default:
			return err
		}
	}
}

// refusal says why an acquire was refused, as the model does: the holder
// and its PTTL in virtual time, or the partition.
func (r *liveRun) refusal(err error) string {
	var held *lockcore.HeldError
	if !errors.As(err, &held) {
		return err.Error()
	}
	who := "another owner"
	if g := r.grantOf(held.Value); g != nil {
		who = g.actor
	}
	pttl := fmtMS(int64(float64(held.PTTL.Milliseconds()) / r.o.TimeScale))
	if held.PTTL < 0 {
		pttl = "none"
	}
	return "not obtained: held by " + who + " (PTTL " + pttl + ")"
}

// granted records a's new lock; byStep: on the acquire step's first
// attempt (see stampLocked).
func (r *liveRun) granted(a *liveActor, lock *lockcore.Lock, sent time.Time, byStep bool) {
	g := &liveGrant{actor: a.name, value: lock.Value(), at: sent, expires: sent.Add(lock.Lease)}
	r.mu.Lock()
	backwards := lock.Fence <= r.maxFence
	prev := r.maxFence
	r.maxFence = max(r.maxFence, lock.Fence)
	r.counter = lock.Fence
	g.modelAt = r.stampLocked(a, sent, byStep)
	a.renewedAt = g.modelAt
	r.snapLocked(g.modelAt, true, lock.Value(), g.expires)
	r.grants = append(r.grants, g)
	g.seq = len(r.grants)
	a.lock, a.grant, a.inSection, a.cancelled, a.secStart = lock, g, true, false, time.Now()
	r.startRenewerLocked(a)
	r.mu.Unlock()
	r.event(a.name, "acquire", true, lock.Fence, fmt.Sprintf("SET NX PX %s, fence %d", fmtMS(r.p.lease), lock.Fence))
	if backwards {
		r.violate(history.CodeFenceBackwards, a.name, fmt.Sprintf("%s got fence %d, not above %d", a.name, lock.Fence, prev))
	}
}

// liveLease is the policy's lease in real time, for lockcore.Keeper (the
// other renewers use renewLoop's model clock). The Keeper measures the
// budget and the bound from the lock's last renewal
// (its AcquiredAt when it starts); one restarted after a pause gets what is
// left of them since a's first acquire, at least 1ns (0 would mean none).
func (r *liveRun) liveLease(a *liveActor) lockcore.Lease {
	l := lockcore.Lease{Lease: r.dur(r.p.lease), Renewable: r.p.renewable}
	spent := a.lock.AcquiredAt.Sub(a.grant.at)
	if r.p.budget > 0 {
		l.Budget = max(r.dur(r.p.budget)-spent, 1)
	}
	if r.p.renewable {
		l.RenewEvery = r.dur(r.p.renewEvery)
		if r.p.bound > 0 {
			l.RenewBound = max(r.dur(r.p.bound)-spent, 1)
		}
	}
	return l
}

// startRenewerLocked starts lockcore's Keeper when owner checks and
// cancel-on-loss are on; otherwise a renewer with the guard that is off
// missing (blind PEXPIRE, or failures that cancel nothing). r.mu must be
// held.
func (r *liveRun) startRenewerLocked(a *liveActor) {
	g := r.sc.Guards
	watch := func(ctx context.Context) {
		if !g.CancelOnLoss {
			return
		}
		// The work stops when the lease can no longer be proven, even
		// between steps; a plain Canceled is our own stop (pause, release).
		context.AfterFunc(ctx, func() {
			if cause := context.Cause(ctx); cause != context.Canceled {
				r.cancel(a, cause)
			}
		})
	}
	if g.OwnerCheck && g.CancelOnLoss {
		ctx, k := lockcore.Keep(r.ctx, a.lock, lockcore.KeeperOptions{Lease: r.liveLease(a), OnRenew: func(err error) {
			r.renewed(a, err, time.Time{})
		}})
		a.keeper, a.workCtx = k, ctx
		watch(ctx)
		return
	}
	ctx, cancel := context.WithCancelCause(r.ctx)
	a.workCtx = ctx
	watch(ctx)
	stop, done := make(chan struct{}), make(chan struct{})
	a.stopRenew, a.renewDone = stop, done
	if r.p.renewable {
		// Its first renewal (after a pause, a catch-up one at once) is
		// published before renewLoop runs, so a step due with it waits
		// for it (pendingLocked), as in the model.
		a.renewDue = a.renewedAt.Add(r.dur(r.p.renewEvery))
	}
	go r.renewLoop(a, ctx, cancel, stop, done)
}

// renewed records a renewal's outcome; at is its time on the model's clock
// (zero: lockcore's Keeper, on its own schedule: the send time, stamped).
func (r *liveRun) renewed(a *liveActor, err error, at time.Time) {
	if err == nil {
		r.mu.Lock()
		if a.grant != nil {
			a.grant.expires = a.lock.AcquiredAt.Add(a.lock.Lease)
			if at.IsZero() {
				at = r.stampLocked(a, a.lock.AcquiredAt, false)
			}
			a.renewedAt = at
			r.snapLocked(a.renewedAt, true, a.lock.Value(), a.grant.expires)
		}
		r.mu.Unlock()
		r.event(a.name, "renew", true, 0, "PEXPIRE "+fmtMS(r.p.lease))
		return
	}
	r.event(a.name, "renew", false, 0, err.Error())
}

// renewLoop renews on the policy's schedule, retrying failures; with
// cancel-on-loss it cancels the work when the lease can no longer be proven.
func (r *liveRun) renewLoop(a *liveActor, ctx context.Context, cancel context.CancelCauseFunc, stop, done chan struct{}) {
	defer close(done)
	defer r.locked(func() { a.renewDue = time.Time{} })
	// On the model's clock (as stamped), as the model's renewer: the budget
	// and the bound count from the grant, a renewal from the one before (or
	// from the wake-up it waited for), a failed one is retried after the
	// model's interval; and a renewal due at the instant of a step comes
	// first (pendingLocked).
	every, retry := r.dur(r.p.renewEvery), r.dur(r.p.retry)
	r.mu.Lock()
	origin := a.grant.modelAt
	next := a.renewedAt.Add(every)
	r.mu.Unlock()
	var budgetEnd, boundEnd time.Time // zero: none
	if r.p.budget > 0 {
		budgetEnd = origin.Add(r.dur(r.p.budget))
	}
	if r.p.bound > 0 {
		boundEnd = origin.Add(r.dur(r.p.bound))
	}
	for {
		wait := time.Hour
		if r.p.renewable {
			r.locked(func() { a.renewDue = next })
			wait = time.Until(next)
		}
		if r.sc.Guards.CancelOnLoss {
			wait = min(wait, time.Until(a.lock.ValidUntil()))
			if !budgetEnd.IsZero() {
				wait = min(wait, time.Until(budgetEnd))
			}
		}
		t := time.NewTimer(max(wait, 0))
		select {
		case <-stop:
			t.Stop()
			cancel(context.Canceled)
			return
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		now := time.Now()
		if r.sc.Guards.CancelOnLoss {
			if !budgetEnd.IsZero() && !now.Before(budgetEnd) {
				cancel(lockcore.ErrBudgetExceeded)
				return
			}
			if !now.Before(a.lock.ValidUntil()) {
				cancel(lockcore.ErrLeaseLost)
				return
			}
		}
		if !r.p.renewable || now.Before(next) {
			continue
		}
		// This renewal's time on the model's clock: when due, or now
		// (after a pause) when that is later by more than jitter. The
		// renewer runs on the model's clock, so its real time is that.
		at := next
		if now.Sub(next) > LiveTolerance {
			at = now
		}
		if !boundEnd.IsZero() && !at.Before(boundEnd) {
			r.event(a.name, "renew", false, 0, "renewal bound reached: renewals stop")
			if r.sc.Guards.CancelOnLoss {
				cancel(lockcore.ErrBoundReached)
			}
			return
		}
		switch r.renewOnce(a, partClient{UniversalClient: r.o.Client, r: r, a: a}, at) {
		case renewOK:
			next = at.Add(every)
		case renewRetry:
			next = at.Add(retry)
		case renewRefused:
			if r.sc.Guards.CancelOnLoss {
				cancel(lockcore.ErrLeaseLost)
			}
			return
		}
	}
}

type renewOutcome int

const (
	renewOK renewOutcome = iota
	renewRetry
	renewRefused
)

// renewOnce is one renewal: lockcore's owner-checked Renew, or a blind
// PEXPIRE (after a GET, only to see whose key it extends).
func (r *liveRun) renewOnce(a *liveActor, client partClient, at time.Time) renewOutcome {
	sent := time.Now()
	if r.sc.Guards.OwnerCheck {
		err := a.lock.Renew(r.ctx)
		switch {
		case err == nil:
			r.renewed(a, nil, at)
			return renewOK
		case errors.Is(err, lockcore.ErrNotHeld):
			r.event(a.name, "renew", false, 0, "refused: not owner or the key is gone")
			return renewRefused
		}
		r.event(a.name, "renew", false, 0, err.Error())
		return renewRetry
	}
	if r.partitioned(a) {
		r.event(a.name, "renew", false, 0, errPartitioned.Error())
		return renewRetry
	}
	v, _ := r.o.Client.Get(r.ctx, r.keys.Lock).Result()
	ok, err := r.o.Client.PExpire(r.ctx, r.keys.Lock, a.lock.Lease).Result()
	if err != nil {
		r.event(a.name, "renew", false, 0, err.Error())
		return renewRetry
	}
	if !ok {
		r.event(a.name, "renew", false, 0, "refused: the key is gone")
		return renewRefused
	}
	a.lock.AcquiredAt = sent
	if v != a.lock.Value() {
		if g := r.grantOf(v); g != nil {
			r.mu.Lock()
			g.expires = sent.Add(a.lock.Lease)
			r.snapLocked(at, true, v, g.expires)
			r.mu.Unlock()
			r.violate(history.CodeForeignRenew, a.name, fmt.Sprintf("%s's blind renewal extended %s's lock", a.name, g.actor))
		}
		r.event(a.name, "renew", true, 0, "blind PEXPIRE extended another holder's key")
		return renewOK
	}
	r.renewed(a, nil, at)
	return renewOK
}

// grantOf returns the grant whose lock value is value (its fence need not
// identify it: after a failover one can be issued twice), or nil; r.mu must
// not be held.
func (r *liveRun) grantOf(value string) *liveGrant {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.grantOfLocked(value)
}

func (r *liveRun) grantOfLocked(value string) *liveGrant {
	for _, g := range r.grants {
		if g.value == value {
			return g
		}
	}
	return nil
}

func (r *liveRun) stopRenewer(a *liveActor) {
	r.mu.Lock()
	k, stop, done := a.keeper, a.stopRenew, a.renewDone
	a.keeper, a.stopRenew, a.renewDone = nil, nil, nil
	r.mu.Unlock()
	if k != nil {
		k.Stop()
	}
	if stop != nil {
		close(stop)
		<-done
	}
}

func (r *liveRun) release(a *liveActor, client partClient) error {
	if a.lock == nil {
		r.event(a.name, "release", false, 0, "skipped: nothing to release")
		return nil
	}
	r.stopRenewer(a)
	r.endSection(a, time.Now())
	defer func() { a.lock = nil }()
	if r.sc.Guards.OwnerCheck {
		err := a.lock.Release(r.ctx)
		switch {
		case err == nil:
			r.released(a, a.lock.Value())
			r.event(a.name, "release", true, 0, "deleted its own key")
		case errors.Is(err, lockcore.ErrNotHeld):
			r.event(a.name, "release", false, 0, "refused: not owner or the key is gone")
		case errors.Is(err, errPartitioned):
			r.event(a.name, "release", false, 0, err.Error())
		default:
			return err
		}
		return nil
	}
	if r.partitioned(a) {
		r.event(a.name, "release", false, 0, errPartitioned.Error())
		return nil
	}
	v, _ := r.o.Client.Get(r.ctx, r.keys.Lock).Result()
	n, err := r.o.Client.Del(r.ctx, r.keys.Lock).Result()
	if err != nil {
		return err
	}
	if n == 0 {
		r.event(a.name, "release", false, 0, "nothing to delete: the key is gone")
		return nil
	}
	r.released(a, v)
	if v != a.lock.Value() {
		if g := r.grantOf(v); g != nil {
			r.mu.Lock()
			g.lostAt = time.Now()
			r.mu.Unlock()
			r.violate(history.CodeForeignRelease, a.name, fmt.Sprintf("%s's blind DEL released %s's lock", a.name, g.actor))
		}
		r.event(a.name, "release", true, 0, "blind DEL deleted another holder's key")
		return nil
	}
	r.event(a.name, "release", true, 0, "deleted its own key")
	return nil
}
