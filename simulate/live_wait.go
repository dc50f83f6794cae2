package simulate

import (
	"sync"
	"time"

	"github.com/lockctl/lockctl/lockcore"
)

func (r *liveRun) cancel(a *liveActor, cause error) {
	r.mu.Lock()
	cancelled := r.cancelLocked(a)
	r.mu.Unlock()
	if cancelled {
		r.cancelled(a, cause)
	}
}

// cancelLocked ends a's critical section as cancelled and reports whether
// it did (false: not in one, or already cancelled); the caller records the
// event (cancelled) once r.mu is released. r.mu must be held.
func (r *liveRun) cancelLocked(a *liveActor) bool {
	if !a.inSection || a.cancelled {
		return false
	}
	a.cancelled = true
	r.endSectionLocked(a, time.Now())
	return true
}

// cancelled records the cancel event of a's work, for cause.
func (r *liveRun) cancelled(a *liveActor, cause error) {
	why := map[error]string{lockcore.ErrLeaseLost: "the lease can no longer be proven",
		lockcore.ErrBudgetExceeded: "the budget ended", lockcore.ErrBoundReached: "the renewal bound was reached"}[cause]
	r.event(a.name, "cancel", true, 0, "work cancelled: "+why)
}

func (r *liveRun) endSection(a *liveActor, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endSectionLocked(a, t)
}

func (r *liveRun) endSectionLocked(a *liveActor, t time.Time) {
	if !a.inSection {
		return
	}
	a.inSection = false
	a.sections = append(a.sections, liveSection{start: a.secStart, end: t, grant: a.grant})
}

// thaw ends a pause for a: at the wake-up, by whichever of the wake-up
// timer, the work and the next step runs first (so no work goes on before
// it), or, when a step was in flight, right after that step (so the write
// that was already past its checks reaches the store before the lease is
// found lost). The model does all of that at the wake-up instant, so here the
// pause counts until thaw runs: a starved goroutine or the in-flight step's
// round trip is not work after the lease. Then it restarts the renewer the
// pause stopped or, with cancel-on-loss and the lease run out, cancels the
// work at once, as the model does; a restarted renewer would cancel it too,
// but only after a goroutine hand-off that a loaded machine can stretch past
// LiveTolerance.
func (r *liveRun) thaw(a *liveActor, byProgram bool) {
	r.mu.Lock()
	if (!byProgram && a.inFlight) || time.Now().Before(a.pausedUntil) {
		r.mu.Unlock()
		return // the step in flight thaws; or a later pause is not over
	}
	a.inFlight = false
	if a.frozen {
		last := &a.pauses[len(a.pauses)-1]
		last[1] = maxTime(last[1], time.Now())
	}
	restart := a.frozen && a.inSection && !a.crashed && a.lock != nil
	a.frozen = false
	// In the same critical section as the end of the freeze, so that no
	// other process's step due at the wake-up (aheadLocked) runs between
	// them.
	cancelled := false
	switch {
	case !restart:
	case r.sc.Guards.CancelOnLoss && !time.Now().Before(a.lock.ValidUntil()):
		cancelled = r.cancelLocked(a)
	default:
		r.startRenewerLocked(a)
	}
	r.mu.Unlock()
	if cancelled {
		r.cancelled(a, lockcore.ErrLeaseLost)
	}
}

// awaitSteps waits until it is the fault f's turn (aheadLocked); it
// returns false when the run's context ends.
func (r *liveRun) awaitSteps(f liveStep) bool {
	return r.await(time.Time{}, func() bool { return !r.aheadLocked(nil, r.real(f.AtMS), f.idx) })
}

// await waits until cond, checked with r.mu held, holds: again after each
// change of the run's state (every r.mu.Unlock) and at each instant a
// time in it comes (nextEdgeLocked), or until, if set; those are all cond
// reads. It returns false when the run's context ends first.
func (r *liveRun) await(until time.Time, cond func() bool) bool {
	for {
		r.mu.Lock()
		if cond() {
			r.mu.Mutex.Unlock() // only read: wakes no other waiter
			return true
		}
		changed := r.mu.changedLocked()
		edge := r.nextEdgeLocked(time.Now())
		r.mu.Mutex.Unlock()
		if !until.IsZero() && (edge.IsZero() || until.Before(edge)) {
			edge = until
		}
		var at <-chan time.Time
		var timer *time.Timer
		if !edge.IsZero() {
			timer = time.NewTimer(time.Until(edge))
			at = timer.C
		}
		select {
		case <-changed:
		case <-at:
		case <-r.ctx.Done():
		}
		if timer != nil {
			timer.Stop()
		}
		if r.ctx.Err() != nil {
			return false
		}
	}
}

// nextEdgeLocked is the first instant after now at which a time that the
// wait conditions compare with the clock comes (a pause's or a
// partition's end, a renewal, a work's end, a next step), zero for none.
// r.mu must be held.
func (r *liveRun) nextEdgeLocked(now time.Time) time.Time {
	var edge time.Time
	consider := func(t time.Time) {
		if t.After(now) && (edge.IsZero() || t.Before(edge)) {
			edge = t
		}
	}
	for _, b := range r.actors {
		if b.crashed {
			continue
		}
		consider(b.pausedUntil)
		consider(b.partUntil)
		consider(b.renewDue)
		consider(b.busyUntil)
		if b.next < len(b.steps) {
			consider(r.nextDueLocked(b))
		}
	}
	return edge
}

// stateMu is liveRun's mutex; its Unlock also wakes the goroutines that
// await a condition on the state it guards (await).
type stateMu struct {
	sync.Mutex
	// changed is closed by the next Unlock; nil while nobody waits.
	changed chan struct{}
}

// Unlock wakes the waiters, then unlocks.
func (m *stateMu) Unlock() {
	if m.changed != nil {
		close(m.changed)
		m.changed = nil
	}
	m.Mutex.Unlock()
}

// changedLocked returns the channel the next Unlock closes; m must be held.
func (m *stateMu) changedLocked() <-chan struct{} {
	if m.changed == nil {
		m.changed = make(chan struct{})
	}
	return m.changed
}

// aheadLocked reports whether something the model does before a step or
// fault due at t (model clock) and listed idx-th is still to come: a
// renewal or the end of a work or call due by t (pendingLocked), or the
// next step of another process than self that is ready to run it (not
// paused or crashed, not busy, not waiting to acquire), due before t, or at
// t and listed before idx. Steps are instants in the model, so such a step
// ends first. r.mu must be held.
func (r *liveRun) aheadLocked(self *liveActor, t time.Time, idx int) bool {
	if r.pendingLocked(t) {
		return true
	}
	now := time.Now()
	for _, b := range r.actors {
		if b == self || b.crashed {
			continue
		}
		// A wake-up due by t and not yet done (thaw): the model wakes a
		// process, restarts its renewer and fires its catch-up renewal
		// before the other steps of that instant. A step in flight at the
		// wake-up is its next step, ranked below.
		if b.frozen && !b.inFlight && !b.pausedUntil.After(t) {
			return true
		}
		if b.next >= len(b.steps) || b.blocking || now.Before(b.pausedUntil) {
			continue
		}
		if d := r.nextDueLocked(b); d.Before(t) || (d.Equal(t) && b.steps[b.next].idx < idx) {
			return true
		}
	}
	return false
}

// locked runs f with r.mu held.
func (r *liveRun) locked(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
}

// pendingLocked reports whether a renewal or the end of a work or call, due
// at or before t (model clock), is still to come in a process that is not
// paused; r.mu must be held. In the model, both come before the steps and
// faults of their instant.
func (r *liveRun) pendingLocked(t time.Time) bool {
	due := func(at time.Time) bool { return !at.IsZero() && !at.After(t) }
	for _, b := range r.actors {
		if !b.crashed && !time.Now().Before(b.pausedUntil) && (due(b.renewDue) || due(b.busyUntil)) {
			return true
		}
	}
	return false
}

// waiterBeforeLocked reports whether a process before a in the model's
// order also waits to acquire and could be served now (not paused, crashed
// or partitioned): the model serves it first. r.mu must be held.
func (r *liveRun) waiterBeforeLocked(a *liveActor) bool {
	now := time.Now()
	for _, b := range r.actors {
		if b.rank < a.rank && b.waiting && !b.crashed && !now.Before(b.pausedUntil) && !now.Before(b.partUntil) {
			return true
		}
	}
	return false
}

// woke records a's wake-up event, once per pause, by whichever of its
// goroutines (the wake-up timer, the work, the step in flight) first finds
// the pause over: the event comes before anything a does after it.
func (r *liveRun) woke(a *liveActor) {
	r.mu.Lock()
	if a.woke || time.Now().Before(a.pausedUntil) {
		r.mu.Unlock()
		return
	}
	a.woke = true
	r.mu.Unlock()
	r.event(a.name, "wake", true, 0, a.name+" resumes where it froze")
}
