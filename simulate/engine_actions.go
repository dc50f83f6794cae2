package simulate

import (
	"fmt"
	"slices"
	"strconv"
)

func noted(s, note string) string {
	if note == "" {
		return s
	}
	return s + " (" + note + ")"
}

func (e *engine) notHolding(a *actor) string {
	if !e.record {
		return "" // skip drops it: no string to build while exploring
	}
	if a.cancelled {
		return "skipped: " + a.name + "'s work was cancelled"
	}
	return "skipped: " + a.name + " does not hold the lock"
}

func (e *engine) skip(a *actor, st *Step, why string) {
	if e.record {
		e.event(a.name, string(st.Do), false, 0, why)
	}
}

func (e *engine) acquire(a *actor, st *Step) {
	if a.inSection {
		e.skip(a, st, "skipped: "+a.name+" already holds the lock")
		return
	}
	if !e.partitioned(a) && e.tryGrant(a, "") {
		return
	}
	if st.WaitMS > 0 {
		a.waiting, a.waitUntil, a.waitFrom = true, e.now+st.WaitMS, e.now
		if e.record {
			e.event(a.name, "acquire", false, 0, e.refusal(a)+"; retrying for up to "+fmtMS(st.WaitMS))
		}
		return
	}
	if e.record {
		e.event(a.name, "acquire", false, 0, e.refusal(a))
	}
}

func (e *engine) refusal(a *actor) string {
	if e.partitioned(a) {
		return "cannot reach Redis"
	}
	g := e.grants[e.lock.grant]
	return "not obtained: held by " + e.actors[g.actor].name + " (PTTL " + fmtMS(e.lock.expires-e.serverNow()) + ")"
}

// tryGrant is SET NX PX plus INCR of the fence counter.
func (e *engine) tryGrant(a *actor, how string) bool {
	if e.lock.present {
		return false
	}
	e.counter++
	fence := e.counter
	backwards := fence <= e.maxFence
	e.maxFence = max(e.maxFence, fence)
	gi := len(e.grants)
	e.grants = append(e.grants, grant{actor: a.index, fence: fence, at: e.now, lostAt: -1})
	e.setLock(lockState{present: true, grant: gi, expires: e.serverNow() + e.p.lease})
	a.inSection, a.cancelled, a.sectionStart = true, false, e.now
	a.grant, a.fence, a.acquiredAt = gi, fence, e.now
	a.validUntil = e.now + e.p.lease - e.p.margin
	a.renewing, a.nextRenew = e.p.renewable, e.now+e.p.renewEvery
	a.lostOpen = -1
	if e.record {
		note := "SET NX PX " + fmtMS(e.p.lease) + ", fence " + strconv.FormatInt(fence, 10)
		if how != "" {
			note += "; " + how
		}
		e.event(a.name, "acquire", true, fence, note)
	}
	if backwards {
		e.violate(bitFenceBackwards, a.name, func() string {
			return fmt.Sprintf("%s got fence %d, not above the %d already issued: the fence counter went backwards (it was not durable)", a.name, fence, e.maxFence)
		})
	}
	return true
}

// renew is one PEXPIRE: owner-checked or blind. auto marks the renewer's own.
func (e *engine) renew(a *actor, auto bool) {
	if e.redlock() && !e.partitioned(a) {
		e.rlRenew(a, auto)
		return
	}
	if e.partitioned(a) {
		if auto {
			a.nextRenew = e.now + e.p.retry
		}
		if e.record {
			e.event(a.name, "renew", false, 0, "cannot reach Redis; retry in "+fmtMS(e.p.retry))
		}
		return
	}
	held := e.held(a)
	if held || (!e.g.OwnerCheck && e.lock.present) {
		e.setLock(lockState{present: true, grant: e.lock.grant, expires: e.serverNow() + e.p.lease})
		a.validUntil = e.now + e.p.lease - e.p.margin
		a.nextRenew = e.now + e.p.renewEvery
		if held {
			if e.record {
				e.event(a.name, "renew", true, 0, "PEXPIRE "+fmtMS(e.p.lease))
			}
			return
		}
		other := e.actors[e.grants[e.lock.grant].actor].name
		if e.record {
			e.event(a.name, "renew", true, 0, "blind PEXPIRE extended "+other+"'s key; "+a.name+" carries on")
		}
		e.violate(bitForeignRenew, a.name, func() string {
			return fmt.Sprintf("%s's blind renewal extended %s's lock; %s believes it still holds it", a.name, other, a.name)
		})
		return
	}
	a.renewing = false
	note := "refused: the key is gone"
	if e.lock.present {
		other := e.actors[e.grants[e.lock.grant].actor].name
		note = "refused: not owner (" + other + " holds it)"
		e.act(gOwner, func() string { return "owner check refused " + a.name + "'s renewal of " + other + "'s lock" })
	}
	e.renewRefused(a, note, "renewal refused")
}

// renewRefused ends a refused renewal, on one node or over Redlock's: a's
// work is cancelled (for reason) when the guards say so, and the event's
// note says which.
func (e *engine) renewRefused(a *actor, note, reason string) {
	if e.g.CancelOnLoss {
		e.cancel(a, reason)
		note += "; work cancelled"
	} else {
		note += "; nobody cancels the work"
	}
	if e.record {
		e.event(a.name, "renew", false, 0, note)
	}
}

func (e *engine) release(a *actor, st *Step) {
	if a.grant < 0 {
		e.skip(a, st, "skipped: nothing to release")
		return
	}
	if e.redlock() && !e.partitioned(a) {
		e.rlRelease(a, st)
		return
	}
	defer func() { e.endSection(a); a.grant = -1 }()
	if e.partitioned(a) {
		e.skip(a, st, "cannot reach Redis; the key stays until it expires")
		return
	}
	held := e.held(a)
	switch {
	case held:
		e.setLock(lockState{})
		if e.record {
			e.event(a.name, "release", true, 0, "deleted its own key")
		}
	case !e.lock.present:
		if e.record {
			e.event(a.name, "release", false, 0, "nothing to delete: the key is gone")
		}
	case e.g.OwnerCheck:
		other := e.actors[e.grants[e.lock.grant].actor].name
		e.act(gOwner, func() string { return "owner check refused " + a.name + "'s release of " + other + "'s lock" })
		if e.record {
			e.event(a.name, "release", false, 0, "refused: not owner ("+other+" holds it)")
		}
	default:
		other := e.actors[e.grants[e.lock.grant].actor].name
		e.setLock(lockState{})
		if e.record {
			e.event(a.name, "release", true, 0, "blind DEL deleted "+other+"'s key: the lock is free while "+other+" works")
		}
		e.violate(bitForeignRelease, a.name, func() string {
			return fmt.Sprintf("%s's blind DEL released %s's lock", a.name, other)
		})
	}
}

func (e *engine) write(a *actor, st *Step, inFlight bool) {
	if !a.inSection {
		e.skip(a, st, e.notHolding(a))
		return
	}
	note := ""
	if e.sc.Check == CheckTTL {
		if inFlight {
			if !a.checkedAtPause {
				e.skip(a, st, "TTL check at "+fmtMS(a.pauseStart)+" failed; write skipped")
				return
			}
			note = "TTL check passed at " + fmtMS(a.pauseStart) + ", before the pause: a stale view; "
		} else if !e.held(a) {
			e.skip(a, st, "TTL check: the key is not "+a.name+"'s; write skipped")
			return
		} else {
			note = "TTL check passed; "
		}
	}
	fence := a.fence
	if e.g.Fencing && fence < e.storeHighest {
		e.rejected++
		highest := e.storeHighest
		e.act(gFencing, func() string {
			return fmt.Sprintf("the store rejected %s's write with fence %d (it had seen %d)", a.name, fence, highest)
		})
		if e.record {
			e.event(a.name, "write", false, fence, note+fmt.Sprintf("rejected: fence %d < %d", fence, highest))
		}
		return
	}
	e.accepted++
	stale := e.storeMaxGrant > a.grant
	e.storeHighest = max(e.storeHighest, fence)
	if e.record {
		switch {
		case stale && e.g.Fencing:
			note += fmt.Sprintf("accepted: fence %d is not below %d, yet a newer holder already wrote", fence, e.storeHighest)
		case stale:
			note += "accepted: without fencing the store cannot tell it is stale"
		default:
			note += "accepted"
		}
		e.event(a.name, "write", true, fence, note)
	}
	if stale {
		e.staleAccepted++
		newer := e.actors[e.grants[e.storeMaxGrant].actor].name
		e.violate(bitStale, a.name, func() string {
			return fmt.Sprintf("the store accepted %s's write with fence %d after %s's newer write", a.name, fence, newer)
		})
		return
	}
	e.storeMaxGrant = max(e.storeMaxGrant, a.grant)
}

func (e *engine) send(a *actor, st *Step) {
	key := st.Key
	if !a.inSection {
		e.skip(a, st, e.notHolding(a))
		return
	}
	if e.sc.Checkpoints && slices.Contains(e.checkpointed, key) {
		if e.record {
			e.event(a.name, "send", false, 0, "skipped: "+key+" is checkpointed; resuming after it")
		}
		return
	}
	i := slices.Index(e.delivered, key)
	if i >= 0 && e.g.IdempotencyKey {
		e.act(gIdem, func() string { return "the receiver deduped the repeated send " + key })
		if e.record {
			e.event(a.name, "send", true, 0, noted("deduped by the receiver: "+key+" was already applied", st.Note))
		}
		return
	}
	if i < 0 {
		e.delivered = append(e.delivered, key)
		e.deliveredN = append(e.deliveredN, 0)
		i = len(e.delivered) - 1
	}
	e.deliveredN[i]++
	e.effects++
	if e.sc.Checkpoints {
		e.checkpointed = append(e.checkpointed, key)
	}
	if e.record {
		e.event(a.name, "send", true, 0, noted("effect applied: "+key, st.Note))
	}
	if e.deliveredN[i] > 1 {
		n := e.deliveredN[i]
		e.violate(bitDuplicate, a.name, func() string {
			return fmt.Sprintf("%s applied %d times: the receiver had no idempotency key to dedupe it", key, n)
		})
	}
}

func (e *engine) failover(st *Step) {
	cut := e.now - e.replicationLag()
	restored := snapshot{counter: e.fenceStart() - 1}
	for i := len(e.snaps) - 1; i >= 0; i-- {
		if e.snaps[i].at <= cut {
			restored = e.snaps[i]
			break
		}
	}
	lost := ""
	if e.lock.present && (!restored.lock.present || restored.lock.grant != e.lock.grant) {
		lost = e.actors[e.grants[e.lock.grant].actor].name + "'s lock"
	}
	if e.sc.FenceSource != FenceStore {
		e.counter = restored.counter
	}
	e.setLock(restored.lock)
	if e.record {
		note := "replica promoted; writes of the last " + fmtMS(e.replicationLag()) + " are lost"
		if lost != "" {
			note += ": " + lost + " (acknowledged, never replicated)"
		}
		if e.sc.FenceSource == FenceStore {
			note += "; the fence counter is durable"
		} else {
			note += "; the fence counter is back at " + strconv.FormatInt(e.counter, 10)
		}
		e.event(serverActor, "failover", true, 0, noted(note, st.Note))
	}
	e.expire()
}

func (e *engine) fenceStart() int64 {
	if e.sc.FenceStart == 0 {
		return 1
	}
	return e.sc.FenceStart
}

func (e *engine) replicationLag() int64 {
	if e.sc.ReplicationLagMS > 0 {
		return e.sc.ReplicationLagMS
	}
	return 1000
}

// fireTimers fires one due timer of a running (not paused) actor: the
// Keeper's cancellation (lease no longer provable, budget, bound) and the
// renewer's schedule.
func (e *engine) fireTimers() bool {
	for _, i := range e.scan {
		a := &e.actors[i]
		if a.crashed || a.paused || a.server {
			continue
		}
		if a.inSection && !a.cancelled && e.g.CancelOnLoss {
			switch {
			case e.p.budget > 0 && e.now >= a.acquiredAt+e.p.budget:
				e.cancel(a, "the budget of "+fmtMS(e.p.budget)+" ended")
				return true
			case e.now >= a.validUntil:
				e.cancel(a, "the lease can no longer be proven")
				return true
			case e.p.bound > 0 && e.now >= a.acquiredAt+e.p.bound:
				e.cancel(a, "the renewal bound of "+fmtMS(e.p.bound)+" was reached")
				return true
			}
		}
		if a.renewing && e.now >= a.nextRenew {
			if e.p.bound > 0 && e.now >= a.acquiredAt+e.p.bound {
				a.renewing = false
				if e.record {
					e.event(a.name, "renew", false, 0, "renewal bound "+fmtMS(e.p.bound)+" reached: renewals stop, the key expires within one lease")
				}
				return true
			}
			e.renew(a, true)
			return true
		}
	}
	return false
}

// cancel is the Keeper cancelling the work's context: the section ends, the
// renewer stops, a running work or call returns.
func (e *engine) cancel(a *actor, why string) {
	a.cancelled = true
	lostNow := !e.held(a)
	e.endSection(a)
	a.busyUntil = 0
	e.act(gCancel, func() string {
		if lostNow {
			return a.name + "'s work was cancelled (" + why + ")"
		}
		return a.name + "'s work was cancelled before its lease ended (" + why + ")"
	})
	if e.record {
		e.event(a.name, "cancel", true, 0, "work cancelled: "+why)
	}
}

func (e *engine) endSection(a *actor) {
	a.inSection = false
	a.renewing = false
}

func (e *engine) serveWaiters() bool {
	for _, i := range e.scan {
		a := &e.actors[i]
		if !a.waiting || a.paused || a.crashed {
			continue
		}
		if e.redlock() && e.rlFree(a) {
			a.waiting = false
			a.shift += e.now - a.waitFrom
			e.rlSend(a, "after waiting "+fmtMS(e.now-a.waitFrom))
			return true
		}
		if !e.redlock() && !e.partitioned(a) && !e.lock.present {
			a.waiting = false
			a.shift += e.now - a.waitFrom
			e.tryGrant(a, "after waiting "+fmtMS(e.now-a.waitFrom))
			return true
		}
		if e.now >= a.waitUntil {
			a.waiting = false
			a.shift += e.now - a.waitFrom
			if e.record {
				e.event(a.name, "acquire", false, 0, "gave up after waiting "+fmtMS(e.now-a.waitFrom))
			}
			return true
		}
	}
	return false
}

// settle ends the section of an actor with nothing left to do: its renewer
// stops (the key stays until it expires unless it released it).
func (e *engine) settle() {
	for _, i := range e.scan {
		a := &e.actors[i]
		if a.inSection && a.next >= len(a.steps) && !e.blocked(a) {
			e.endSection(a)
		}
	}
}

func (e *engine) nextTime() int64 {
	t := never
	consider := func(v int64) {
		if v > e.now && v < t {
			t = v
		}
	}
	if e.lock.present {
		consider(e.lock.expires - e.jump)
	}
	if e.nextFault < len(e.faults) {
		consider(e.steps[e.faults[e.nextFault]].AtMS)
	}
	consider(e.nextParked())
	if e.redlock() {
		consider(e.rlNextTime())
	}
	for _, i := range e.scan {
		a := &e.actors[i]
		if a.crashed {
			continue
		}
		if a.paused {
			consider(a.pausedUntil)
		}
		consider(a.partUntil)
		consider(a.busyUntil)
		if a.waiting {
			consider(a.waitUntil)
		}
		if !e.blocked(a) && a.next < len(a.steps) {
			consider(e.steps[a.steps[a.next]].AtMS + a.shift)
		}
		if a.paused {
			continue
		}
		if a.inSection && !a.cancelled && e.g.CancelOnLoss {
			consider(a.validUntil)
			if e.p.budget > 0 {
				consider(a.acquiredAt + e.p.budget)
			}
			if e.p.bound > 0 {
				consider(a.acquiredAt + e.p.bound)
			}
		}
		if a.renewing {
			consider(a.nextRenew)
		}
	}
	return t
}
