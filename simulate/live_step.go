package simulate

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockctl/lockctl/history"
	"github.com/lockctl/lockctl/lockcore"
)

// program runs an actor's steps in order; like the model, a step that falls
// in a pause runs at the wake-up (in flight: it already passed its checks)
// and later steps move by the same delay.
func (r *liveRun) program(a *liveActor) error {
	for _, ls := range a.steps {
		st := ls.Step
		r.mu.Lock()
		due := r.real(st.AtMS).Add(a.shift)
		at := r.nextDueLocked(a)
		r.mu.Unlock()
		if !r.sleepUntil(maxTime(due, at)) {
			return r.ctx.Err()
		}
		// Its turn, as in the model: after the faults listed before it,
		// and what else is due before it (aheadLocked).
		if !r.await(time.Time{}, func() bool { return r.applied >= ls.before && !r.aheadLocked(a, at, ls.idx) }) {
			return r.ctx.Err()
		}
		inFlight := false
		for {
			r.mu.Lock()
			p, until := time.Now().Before(a.pausedUntil), a.pausedUntil
			// Due by the end of a pause, this step is the one in flight
			// at the wake-up, even when the wake-up is already past or
			// another goroutine marked it so (wakeInFlightLocked).
			if p || a.inFlight || r.wakeInFlightLocked(a) {
				a.inFlight, inFlight = true, true
			}
			r.mu.Unlock()
			if !p {
				break
			}
			if !r.sleepUntil(until) {
				return r.ctx.Err()
			}
		}
		r.mu.Lock()
		crashed := a.crashed
		if late := time.Since(due); late > 0 {
			a.shift += late
		}
		if inFlight { // it runs at the wake-up
			at = maxTime(at, a.pausedUntil)
		}
		a.modelShift += at.Sub(r.real(st.AtMS).Add(a.modelShift))
		a.stepAt, a.freeAt = at, at
		r.mu.Unlock()
		if crashed {
			return nil
		}
		if inFlight {
			r.woke(a)
		} else {
			r.thaw(a, false)
		}
		began := time.Now()
		if err := r.step(a, st, inFlight); err != nil {
			return err
		}
		if inFlight {
			r.thaw(a, true)
		}
		r.mu.Lock()
		if st.Do == ActAcquire && st.WaitMS > 0 {
			// As in the model, the steps after it move by the wait.
			a.shift += time.Since(began)
			a.modelShift += time.Since(began)
		}
		a.next++
		r.mu.Unlock()
	}
	r.stopRenewer(a)
	r.endSection(a, time.Now())
	return nil
}

// wakeInFlightLocked reports whether a's next step is the one in flight at
// the wake-up of a's last pause, not yet woken: due, on the model's clock,
// from the pause's start to its end, the wake-up instant included. The
// model runs it at the wake-up, before the cancellation and renewal timers.
// r.mu must be held.
func (r *liveRun) wakeInFlightLocked(a *liveActor) bool {
	if a.woke || a.pausedUntil.IsZero() || a.next >= len(a.steps) {
		return false
	}
	t := r.nextDueLocked(a)
	return !t.Before(a.pauseStart) && !t.After(a.pausedUntil)
}

// nextDueLocked is when a's next step is due on the model's clock: its time
// moved by the model's delays so far, and not before the last step ended.
// r.mu must be held.
func (r *liveRun) nextDueLocked(a *liveActor) time.Time {
	return maxTime(r.real(a.steps[a.next].AtMS).Add(a.modelShift), a.freeAt)
}

func (r *liveRun) step(a *liveActor, st Step, inFlight bool) error {
	client := partClient{UniversalClient: r.o.Client, r: r, a: a}
	r.mu.Lock()
	inSection, cancelled := a.inSection, a.cancelled
	r.mu.Unlock()
	guards := r.sc.Guards
	if guards.CancelOnLoss && inSection && !inFlight {
		r.mu.Lock()
		ctx := a.workCtx
		r.mu.Unlock()
		if ctx != nil && ctx.Err() != nil && context.Cause(ctx) != context.Canceled {
			r.cancel(a, context.Cause(ctx))
			inSection, cancelled = false, true
		}
	}
	switch st.Do {
	case ActAcquire:
		return r.acquire(a, client, st)
	case ActRelease:
		return r.release(a, client)
	case ActRenew:
		if a.lock != nil && r.renewOnce(a, client, a.stepAt) == renewRefused && guards.CancelOnLoss {
			r.cancel(a, lockcore.ErrLeaseLost)
		}
		return nil
	case ActWork, ActCall:
		if !inSection {
			r.event(a.name, string(st.Do), false, 0, skipNote(a.name, cancelled))
			return nil
		}
		r.event(a.name, string(st.Do), true, 0, string(st.Do)+" for "+fmtMS(st.ForMS))
		if inFlight {
			// Only its start was in flight: thaw now, so the rest is work
			// like any other, or is cancelled at once if the lease ran out.
			r.thaw(a, true)
		}
		r.busy(a, st.Do, r.dur(st.ForMS))
		return nil
	case ActWrite:
		if !inSection {
			r.event(a.name, "write", false, 0, skipNote(a.name, cancelled))
			return nil
		}
		return r.write(a, client, inFlight)
	case ActSend:
		if !inSection {
			r.event(a.name, "send", false, 0, skipNote(a.name, cancelled))
			return nil
		}
		r.mu.Lock()
		done := r.sc.Checkpoints && slices.Contains(r.checkpointed, st.Key)
		r.mu.Unlock()
		if done {
			r.event(a.name, "send", false, 0, "skipped: "+st.Key+" is checkpointed; resuming after it")
			return nil
		}
		if r.sc.Checkpoints {
			// The checkpoint is written with the effect, as in the model.
			defer func() {
				r.mu.Lock()
				r.checkpointed = append(r.checkpointed, st.Key)
				r.mu.Unlock()
			}()
		}
		if guards.IdempotencyKey {
			fresh, err := r.o.Client.HSetNX(r.ctx, r.recvKey, st.Key, 1).Result()
			if err != nil {
				return err
			}
			if !fresh {
				r.event(a.name, "send", true, 0, "deduped by the receiver: "+st.Key)
				return nil
			}
			r.event(a.name, "send", true, 0, "effect applied: "+st.Key)
			return nil
		}
		n, err := r.o.Client.HIncrBy(r.ctx, r.recvKey, st.Key, 1).Result()
		if err != nil {
			return err
		}
		r.event(a.name, "send", true, 0, "effect applied: "+st.Key)
		if n > 1 {
			r.violate(history.CodeDuplicate, a.name, fmt.Sprintf("%s applied %d times", st.Key, n))
		}
	}
	return nil
}

// write is one write step of a holder in its section: the TTL check when
// asked, then the store's fenced (or unfenced) write. It returns Redis
// errors.
func (r *liveRun) write(a *liveActor, client partClient, inFlight bool) error {
	if r.sc.Check == CheckTTL {
		ok := a.checkedOK
		if !inFlight {
			v, err := client.Get(r.ctx, r.keys.Lock).Result()
			ok = err == nil && v == a.lock.Value()
		}
		if !ok {
			r.event(a.name, "write", false, 0, "TTL check: the key is not "+a.name+"'s; write skipped")
			return nil
		}
	}
	fencing := "0"
	if r.sc.Guards.Fencing {
		fencing = "1"
	}
	res, err := storeWriteScript.Run(r.ctx, r.o.Client, []string{r.storeKey}, a.lock.Fence, a.name, fencing, a.grant.seq).Int64Slice()
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.storeHigh = max(r.storeHigh, a.lock.Fence)
	r.mu.Unlock()
	if res[0] == 0 {
		r.event(a.name, "write", false, a.lock.Fence, fmt.Sprintf("rejected: fence %d < %d", a.lock.Fence, res[1]))
		return nil
	}
	r.event(a.name, "write", true, a.lock.Fence, "accepted")
	// Stale as in the model: a later grant has written already.
	if newest := int(res[2]); a.grant.seq < newest {
		r.mu.Lock()
		newer := r.grants[newest-1].actor
		r.mu.Unlock()
		r.violate(history.CodeStaleWrite, a.name, fmt.Sprintf("the store accepted %s's write with fence %d after %s's newer write", a.name, a.lock.Fence, newer))
	}
	return nil
}

func skipNote(name string, cancelled bool) string {
	if cancelled {
		return "skipped: " + name + "'s work was cancelled"
	}
	return "skipped: " + name + " does not hold the lock"
}

// busy is work or a blocking call (kind) of d: it makes progress only while
// the process is not paused, returns early when cancel-on-loss cancels the
// work, and records kind_done when it ends.
func (r *liveRun) busy(a *liveActor, kind Action, d time.Duration) {
	// It counts from the step's time on the model's clock: the scheduling
	// jitter before it began counts as done, so it ends when the model's
	// does, and steps and faults due then wait for its end.
	r.mu.Lock()
	remaining := d - max(time.Since(a.stepAt), 0)
	a.busyUntil = a.stepAt.Add(d)
	a.blocking = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		if remaining <= 0 {
			a.freeAt = a.busyUntil
		} else { // cancelled or crashed: it ends now
			a.freeAt = r.stampLocked(a, time.Now(), false)
		}
		a.blocking, a.busyUntil = false, time.Time{}
		r.mu.Unlock()
	}()
	defer func() {
		if remaining <= 0 {
			r.event(a.name, string(kind)+"_done", true, 0, string(kind)+" finished")
		}
	}()
	for remaining > 0 {
		if p, until := r.paused(a); p {
			if !r.sleepUntil(until) {
				return
			}
			r.woke(a)
			r.thaw(a, false)
			r.mu.Lock()
			a.busyUntil = until.Add(remaining)
			r.mu.Unlock()
			continue
		}
		r.mu.Lock()
		ctx, crashed, cancelled := a.workCtx, a.crashed, a.cancelled
		r.mu.Unlock()
		if crashed || cancelled {
			return
		}
		chunk := min(remaining, time.Millisecond)
		var done <-chan struct{}
		if r.sc.Guards.CancelOnLoss && ctx != nil {
			done = ctx.Done()
		}
		began := time.Now()
		t := time.NewTimer(chunk)
		select {
		case <-t.C:
			// What passed counts, not the chunk asked for (a timer fires
			// late, by more under load), up to a pause that began meanwhile.
			end := time.Now()
			r.mu.Lock()
			if a.pauseStart.After(began) {
				end = minTime(end, a.pauseStart)
			}
			r.mu.Unlock()
			remaining -= end.Sub(began)
		case <-done:
			t.Stop()
			if context.Cause(ctx) == context.Canceled {
				// The renewer was stopped by a pause, not by the lease.
				if !r.sleepUntil(time.Now().Add(chunk)) {
					return
				}
				continue
			}
			r.cancel(a, context.Cause(ctx))
			return
		case <-r.ctx.Done():
			t.Stop()
			return
		}
	}
}
