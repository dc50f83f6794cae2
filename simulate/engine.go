package simulate

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
)

const never = int64(1) << 62

// maxIterations bounds one run (a scenario renewing every 1ms for days).
const maxIterations = 5_000_000

// stopEvery is how many iterations a run makes between looks at its
// context: microseconds, so Ctrl-C stops even a run of millions at once.
const stopEvery = 1024

type lockState struct {
	present bool
	grant   int
	expires int64 // on the server's clock
}

type snapshot struct {
	at      int64
	lock    lockState
	counter int64
}

type grant struct {
	actor  int
	fence  int64
	at     int64
	lostAt int64
}

type actor struct {
	name   string
	server bool
	// index is the actor's place in engine.actors, lane its place in
	// engine.lanes (-1 for the server).
	index, lane int
	steps       []int
	next        int
	shift       int64

	crashed        bool
	paused         bool
	pausedUntil    int64
	pauseStart     int64
	wokeAt         int64
	checkedAtPause bool
	partUntil      int64
	busyUntil      int64
	busyKind       Action
	waiting        bool
	waitUntil      int64
	waitFrom       int64

	inSection    bool
	sectionStart int64
	cancelled    bool
	grant        int
	fence        int64
	validUntil   int64
	acquiredAt   int64
	renewing     bool
	nextRenew    int64

	lostOpen     int64
	lostLeaseEnd int64
}

// engine is one deterministic run. With record off it keeps only the
// violation mask (the fast path of exploration).
type engine struct {
	sc     *Scenario
	p      leaseParams
	g      Guards
	record bool
	// stop, if set, stops the run with its context's error when that is
	// done.
	stop *stopper

	now       int64
	lock      lockState
	jump      int64
	counter   int64
	maxFence  int64
	snaps     []snapshot // kept only when the scenario has a failover
	failovers bool
	grants    []grant

	storeHighest  int64
	storeMaxGrant int
	accepted      int
	rejected      int
	staleAccepted int
	effects       int
	delivered     []string
	deliveredN    []int
	checkpointed  []string

	steps     []Step
	faults    []int
	nextFault int
	actors    []actor
	byName    map[string]int // actor name → index in actors
	// open is the overlap start of each pair of actors both in the critical
	// section, keyed by pairKey; closing is accumulate's scratch list.
	open    map[int64]int64
	closing []int64
	live    []int // accumulate's scratch list of active actors

	mask       uint8
	violations []Violation
	events     []Event
	lanes      []Lane
	acted      [4]int
	actedNote  [4]string
}

const (
	gFencing = iota
	gOwner
	gCancel
	gIdem
)

// newEngine prepares a run of sc with guards g.
func newEngine(sc *Scenario, p leaseParams, g Guards, record bool) *engine {
	e := &engine{sc: sc, p: p, g: g, record: record}
	e.reset()
	return e
}

// reset puts the engine back to time 0 for sc's steps (sorted by time, file
// order on ties).
func (e *engine) reset() {
	e.now, e.jump = 0, 0
	e.lock = lockState{}
	start := e.sc.FenceStart
	if start == 0 {
		start = 1
	}
	e.counter, e.maxFence = start-1, start-1
	e.snaps = e.snaps[:0]
	e.grants = e.grants[:0]
	e.storeHighest, e.storeMaxGrant = 0, -1
	e.accepted, e.rejected, e.staleAccepted, e.effects = 0, 0, 0, 0
	e.delivered, e.deliveredN, e.checkpointed = e.delivered[:0], e.deliveredN[:0], e.checkpointed[:0]
	e.mask = 0
	e.violations, e.events, e.lanes = nil, nil, nil
	e.acted, e.actedNote = [4]int{}, [4]string{}

	e.steps = append(e.steps[:0], e.sc.Steps...)
	slices.SortStableFunc(e.steps, func(a, b Step) int { return cmp.Compare(a.AtMS, b.AtMS) })
	e.actors = e.actors[:0]
	if e.byName == nil {
		e.byName, e.open = map[string]int{}, map[int64]int64{}
	}
	clear(e.byName)
	clear(e.open)
	e.faults, e.nextFault = e.faults[:0], 0
	e.failovers = slices.ContainsFunc(e.steps, func(s Step) bool { return s.Do == ActFailover })
	for i, st := range e.steps {
		ai := e.findOrAddActor(st.Actor)
		if st.Do.fault() {
			e.faults = append(e.faults, i)
			continue
		}
		e.actors[ai].steps = append(e.actors[ai].steps, i)
	}
	if e.record {
		e.lanes = make([]Lane, 0, len(e.actors))
		for i := range e.actors {
			if a := &e.actors[i]; !a.server {
				a.lane = len(e.lanes)
				e.lanes = append(e.lanes, Lane{Actor: a.name, Segments: []Segment{}})
			}
		}
	}
}

// findOrAddActor returns the index of the actor called name in e.actors,
// adding it when it is new.
func (e *engine) findOrAddActor(name string) int {
	if i, ok := e.byName[name]; ok {
		return i
	}
	var steps []int // reuse the buffer of a previous run (exploration)
	if n := len(e.actors); n < cap(e.actors) {
		steps = e.actors[: n+1 : n+1][n].steps[:0]
	}
	i := len(e.actors)
	e.actors = append(e.actors, actor{name: name, server: name == serverActor, index: i, lane: -1, steps: steps, grant: -1, wokeAt: -1, lostOpen: -1})
	e.byName[name] = i
	return i
}

// run plays the scenario to the end. It returns an error when the run
// does not settle (a model bug) or, with e.stop, when its context is done.
func (e *engine) run() error {
	for i := 0; ; i++ {
		if i%stopEvery == 0 && e.stop.stopped() {
			return e.stop.ctx.Err()
		}
		if i > maxIterations {
			return fmt.Errorf("scenario %q needs more than %d simulation steps (at %s, renewing every %s); shorten it or renew less often", e.sc.Name, maxIterations, fmtMS(e.now), fmtMS(e.p.renewEvery))
		}
		e.instant()
		next := e.nextTime()
		if next == never {
			break
		}
		e.accumulate(e.now, next)
		e.now = next
	}
	e.accumulate(e.now, never)
	return nil
}

// instant processes everything due at e.now, in a fixed order: server
// expiry, wake-ups, the step in flight at a wake-up, timers (cancellation,
// renewals), other due steps, waiters; then ends finished sections.
func (e *engine) instant() {
	e.expire()
	e.wakeups()
	for {
		if e.runDue(true) || e.fireTimers() || e.runDue(false) || e.serveWaiters() {
			continue
		}
		break
	}
	e.settle()
}

func (e *engine) serverNow() int64 { return e.now + e.jump }

func (e *engine) held(a *actor) bool {
	return a.grant >= 0 && e.lock.present && e.lock.grant == a.grant
}

func (e *engine) partitioned(a *actor) bool { return a.partUntil > e.now }

func (e *engine) blocked(a *actor) bool {
	return a.paused || a.busyUntil > e.now || a.waiting
}

// setLock replaces the lock state, marking the old grant's loss time.
func (e *engine) setLock(ls lockState) {
	if e.lock.present && (!ls.present || ls.grant != e.lock.grant) {
		e.grants[e.lock.grant].lostAt = e.now
	}
	if ls.present && (!e.lock.present || ls.grant != e.lock.grant) {
		e.grants[ls.grant].lostAt = -1
	}
	e.lock = ls
	if e.failovers {
		e.snaps = append(e.snaps, snapshot{at: e.now, lock: ls, counter: e.counter})
	}
}

func (e *engine) expire() {
	if e.lock.present && e.lock.expires <= e.serverNow() {
		g := e.lock.grant
		e.setLock(lockState{})
		if e.record {
			who := e.actors[e.grants[g].actor].name
			e.event(serverActor, "expire", true, 0, who+"'s key expired on the server's clock: the lock is free; "+who+" is not told")
		}
	}
}

func (e *engine) wakeups() {
	for i := range e.actors {
		a := &e.actors[i]
		if a.crashed {
			continue
		}
		if a.paused && a.pausedUntil <= e.now {
			a.paused = false
			a.wokeAt = e.now
			if e.record {
				note := a.name + " resumes where it froze; nothing told it time passed"
				if a.inSection && !e.held(a) {
					note = a.name + " resumes where it froze, still believing it holds the lock"
				}
				e.event(a.name, "wake", true, 0, note)
			}
		}
		if a.partUntil == e.now && a.partUntil > 0 && e.record {
			e.event(a.name, "heal", true, 0, a.name+" can reach Redis again")
		}
		if a.busyUntil == e.now && a.busyUntil > 0 {
			a.busyUntil = 0
			if e.record {
				e.event(a.name, string(a.busyKind)+"_done", true, 0, string(a.busyKind)+" finished")
			}
		}
	}
}

// runDue runs one due step: with inflight, only the first step of an actor
// that woke at this instant (it was frozen between its checks and this step).
func (e *engine) runDue(inflight bool) bool {
	best, bestIdx := -1, 0
	var bestDue int64
	for i := range e.actors {
		a := &e.actors[i]
		if a.next >= len(a.steps) {
			continue
		}
		if a.crashed {
			a.next = len(a.steps)
			continue
		}
		if e.blocked(a) || (inflight && a.wokeAt != e.now) {
			continue
		}
		si := a.steps[a.next]
		due := e.steps[si].AtMS + a.shift
		if due > e.now {
			continue
		}
		if best < 0 || due < bestDue || (due == bestDue && si < bestIdx) {
			best, bestIdx, bestDue = i, si, due
		}
	}
	if !inflight && e.nextFault < len(e.faults) {
		si := e.faults[e.nextFault]
		if due := e.steps[si].AtMS; due <= e.now && (best < 0 || due < bestDue || (due == bestDue && si < bestIdx)) {
			e.nextFault++
			st := &e.steps[si]
			e.step(&e.actors[e.byName[st.Actor]], si, false)
			return true
		}
	}
	if best < 0 {
		return false
	}
	a := &e.actors[best]
	a.shift += e.now - bestDue
	a.next++
	inFlight := a.wokeAt == e.now
	a.wokeAt = -1
	e.step(a, bestIdx, inFlight)
	return true
}

func (e *engine) step(a *actor, si int, inFlight bool) {
	st := &e.steps[si]
	switch st.Do {
	case ActAcquire:
		e.acquire(a, st)
	case ActRenew:
		if a.grant < 0 {
			e.skip(a, st, "nothing to renew")
			return
		}
		e.renew(a, false)
	case ActRelease:
		e.release(a, st)
	case ActWork, ActCall:
		if !a.inSection {
			e.skip(a, st, e.notHolding(a))
			return
		}
		a.busyUntil, a.busyKind = e.now+st.ForMS, st.Do
		if e.record {
			what := "critical-section work for " + fmtMS(st.ForMS)
			if st.Do == ActCall {
				what = "blocking external call for " + fmtMS(st.ForMS) + ": the worker stalls, the renewer keeps renewing"
			}
			e.event(a.name, string(st.Do), true, 0, noted(what, st.Note))
		}
	case ActWrite:
		e.write(a, st, inFlight)
	case ActSend:
		e.send(a, st)
	case ActPause:
		if a.crashed {
			return
		}
		if a.busyUntil > e.now {
			a.busyUntil += st.ForMS
		}
		if a.paused {
			a.pausedUntil += st.ForMS
		} else {
			a.paused, a.pausedUntil, a.pauseStart = true, e.now+st.ForMS, e.now
			a.checkedAtPause = e.held(a) && !e.partitioned(a)
		}
		if e.record {
			e.event(a.name, "pause", true, 0, noted("process frozen for "+fmtMS(st.ForMS)+" (worker and renewer)", st.Note))
		}
	case ActPartition:
		if a.crashed {
			return
		}
		a.partUntil = max(a.partUntil, e.now+st.ForMS)
		if e.record {
			e.event(a.name, "partition", true, 0, noted("cut off from Redis for "+fmtMS(st.ForMS)+"; work goes on", st.Note))
		}
	case ActCrash:
		if a.crashed {
			return
		}
		a.crashed = true
		e.endSection(a)
		a.waiting, a.busyUntil, a.paused = false, 0, false
		a.next = len(a.steps)
		if e.record {
			e.event(a.name, "crash", true, 0, noted("process killed; its key stays until it expires", st.Note))
		}
	case ActFailover:
		e.failover(st)
	case ActClockJump:
		e.jump += st.ByMS
		if e.record {
			e.event(serverActor, "clock_jump", true, 0, noted("the server's clock steps forward "+fmtMS(st.ByMS)+": every lease ends early", st.Note))
		}
		e.expire()
	}
}

// stopper is a context's Done channel, read without blocking: a few
// nanoseconds and no lock (ctx.Err() takes one), so runs can look at it
// often without slowing exploration.
type stopper struct {
	ctx  context.Context
	done <-chan struct{}
}

func newStopper(ctx context.Context) *stopper { return &stopper{ctx: ctx, done: ctx.Done()} }

// stopped reports whether the context is done; a nil stopper never is.
func (s *stopper) stopped() bool {
	if s == nil {
		return false
	}
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func noted(s, note string) string {
	if note == "" {
		return s
	}
	return s + " (" + note + ")"
}

func (e *engine) notHolding(a *actor) string {
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
	if e.g.CancelOnLoss {
		e.cancel(a, "renewal refused")
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
	for i := range e.actors {
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
	for i := range e.actors {
		a := &e.actors[i]
		if !a.waiting || a.paused || a.crashed {
			continue
		}
		if !e.partitioned(a) && !e.lock.present {
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
	for i := range e.actors {
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
	for i := range e.actors {
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

func (e *engine) active(a *actor) bool {
	return !a.server && a.inSection && !a.crashed && !a.paused
}

// accumulate checks the invariants that hold over a stretch of time,
// [from, to), during which nothing changes: OVERLAP and
// LOCK_LOST_WHILE_WORKING. to == never closes every open interval. It costs
// one pass over the actors plus the pairs of actors in the critical section
// (not all pairs: 5,000 actors made that 25 million a step).
func (e *engine) accumulate(from, to int64) {
	if to <= from {
		return
	}
	closing := to == never
	e.live = e.live[:0]
	for i := range e.actors {
		a := &e.actors[i]
		if a.server {
			continue
		}
		ai := e.active(a) && !closing
		if ai {
			e.live = append(e.live, i)
		}
		if e.record {
			e.lane(i, from, to, closing)
		}
		e.lockLost(a, ai, from)
	}
	e.overlaps(from)
}

// lockLost opens or closes a's LOCK_LOST_WHILE_WORKING interval at from.
func (e *engine) lockLost(a *actor, active bool, from int64) {
	lost := active && !e.held(a)
	switch {
	case lost && a.lostOpen < 0:
		a.lostOpen, a.lostLeaseEnd = from, from
		if a.grant >= 0 && e.grants[a.grant].lostAt >= 0 {
			a.lostLeaseEnd = e.grants[a.grant].lostAt
		}
		e.mask |= bitLockLost
	case !lost && a.lostOpen >= 0:
		if e.record {
			start, g := a.lostOpen, a.lostLeaseEnd
			e.violations = append(e.violations, Violation{Code: CodeLockLost, AtMS: start, Actor: a.name,
				Message: fmt.Sprintf("%s kept working %s–%s after its lease ended at %s", a.name, fmtMS(start), fmtMS(from), fmtMS(g))})
		}
		a.lostOpen = -1
	}
}

// pairKey packs actor indexes i < j into one map key; pairOf unpacks it.
func pairKey(i, j int) int64    { return int64(i)<<32 | int64(j) }
func pairOf(k int64) (i, j int) { return int(k >> 32), int(k & (1<<32 - 1)) }
func (e *engine) bothLive(k int64) bool {
	i, j := pairOf(k)
	_, oi := slices.BinarySearch(e.live, i)
	_, oj := slices.BinarySearch(e.live, j)
	return oi && oj
}

// overlaps opens an OVERLAP interval at from for each new pair of actors in
// e.live and closes those whose pair left it, in pair order (the order of
// the violations of one instant).
func (e *engine) overlaps(from int64) {
	e.closing = e.closing[:0]
	for k := range e.open {
		if !e.bothLive(k) {
			e.closing = append(e.closing, k)
		}
	}
	slices.Sort(e.closing)
	for _, k := range e.closing {
		if e.record {
			i, j := pairOf(k)
			a, b := &e.actors[i], &e.actors[j]
			first, second := a, b
			if b.sectionStart < a.sectionStart {
				first, second = b, a
			}
			e.violations = append(e.violations, Violation{Code: CodeOverlap, AtMS: e.open[k], Actor: second.name,
				Message: fmt.Sprintf("%s and %s both in the critical section %s–%s", first.name, second.name, fmtMS(e.open[k]), fmtMS(from))})
		}
		delete(e.open, k)
	}
	for x, i := range e.live {
		for _, j := range e.live[x+1:] {
			if _, ok := e.open[pairKey(i, j)]; !ok {
				e.open[pairKey(i, j)] = from
				e.mask |= bitOverlap
			}
		}
	}
}

func (e *engine) lane(i int, from, to int64, closing bool) {
	if closing {
		return
	}
	a := &e.actors[i]
	state := LaneIdle
	switch {
	case a.crashed:
		state = LaneCrashed
	case a.paused:
		state = LanePaused
	case a.inSection && a.busyUntil > from && a.busyKind == ActCall:
		state = LaneCall
	case a.inSection && e.partitioned(a):
		state = LanePartitioned
	case a.inSection:
		state = LaneWorking
	}
	l := &e.lanes[a.lane]
	holds := e.held(a)
	if k := len(l.Segments); k > 0 && l.Segments[k-1].State == state && l.Segments[k-1].Holds == holds && l.Segments[k-1].ToMS == from {
		l.Segments[k-1].ToMS = to
		return
	}
	l.Segments = append(l.Segments, Segment{FromMS: from, ToMS: to, State: state, Holds: holds})
}

// violate records a violation found at an instant (not over a stretch).
func (e *engine) violate(bit uint8, actorName string, msg func() string) {
	e.mask |= bit
	if e.record {
		e.violations = append(e.violations, Violation{Code: Codes[bitIndex(bit)], AtMS: e.now, Actor: actorName, Message: msg()})
	}
}

func bitIndex(bit uint8) int {
	for i := range Codes {
		if bit == 1<<i {
			return i
		}
	}
	return 0
}

// act records that a guard intervened.
func (e *engine) act(guard int, note func() string) {
	e.acted[guard]++
	if e.record && e.actedNote[guard] == "" {
		e.actedNote[guard] = note()
	}
}

// event appends a timeline line, folding repeated identical renewals.
func (e *engine) event(actorName, kind string, ok bool, fence int64, note string) {
	var lv *LockView
	if e.lock.present {
		g := e.grants[e.lock.grant]
		lv = &LockView{Holder: e.actors[g.actor].name, PTTLMS: max(e.lock.expires-e.serverNow(), 0), Fence: g.fence}
	}
	if k := len(e.events); k > 0 && kind == "renew" {
		last := &e.events[k-1]
		if last.Kind == kind && last.Actor == actorName && last.OK == ok && last.Note == note {
			last.Count = max(last.Count, 1) + 1
			last.UntilMS = e.now
			last.Lock = lv
			last.StoreFence = e.storeHighest
			return
		}
	}
	e.events = append(e.events, Event{AtMS: e.now, Actor: actorName, Kind: kind, OK: ok, Fence: fence, Lock: lv, StoreFence: e.storeHighest, Note: note})
}
