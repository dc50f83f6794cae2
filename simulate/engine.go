package simulate

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/lockctl/lockctl/history"
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

	// acquiring: a Redlock acquire whose replies are not yet judged (its
	// state is in engine.rla, so one server's actors stay small).
	acquiring bool

	// listed is whether the actor is in engine.scan, parkedAt its place
	// in engine.parked (-1 when not parked).
	listed   bool
	parkedAt int
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

	now  int64
	lock lockState
	// nodes are the Redlock nodes (none with one server), rla each
	// actor's Redlock state by actor index.
	nodes     []rnode
	rla       []rlActor
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
	// scan and parked are the schedule of engine_sched.go.
	scan   []int
	parked dueHeap

	mask       uint8
	violations []Violation
	events     []Event
	lanes      []history.Lane
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
	e.resetNodes()
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
		e.lanes = make([]history.Lane, 0, len(e.actors))
		for i := range e.actors {
			if a := &e.actors[i]; !a.server {
				a.lane = len(e.lanes)
				e.lanes = append(e.lanes, history.NewLane(a.name))
			}
		}
	}
	e.resetRedlockActors()
	e.resetSchedule()
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
		e.park()
		e.now = next
	}
	e.accumulate(e.now, never)
	return nil
}

// instant processes everything due at e.now, in a fixed order: server
// expiry, wake-ups, the step in flight at a wake-up, timers (cancellation,
// renewals), other due steps, waiters; then ends finished sections.
func (e *engine) instant() {
	e.unpark()
	e.expire()
	e.wakeups()
	for {
		if e.runDue(true) || e.fireTimers() || e.runDue(false) || e.rlDecide() || e.serveWaiters() {
			continue
		}
		break
	}
	e.settle()
}

func (e *engine) serverNow() int64 { return e.now + e.jump }

func (e *engine) held(a *actor) bool {
	if e.redlock() {
		return e.rlHeld(a)
	}
	return a.grant >= 0 && e.lock.present && e.lock.grant == a.grant
}

func (e *engine) partitioned(a *actor) bool { return a.partUntil > e.now }

func (e *engine) blocked(a *actor) bool {
	return a.paused || a.busyUntil > e.now || a.waiting || a.acquiring
}

// setLock replaces the lock state, marking the old grant's loss time.
func (e *engine) setLock(ls lockState) {
	if e.lock.present && (!ls.present || ls.grant != e.lock.grant) {
		e.grants[e.lock.grant].lostAt = e.now
		e.activate(e.grants[e.lock.grant].actor) // its lane stops holding
	}
	if ls.present && (!e.lock.present || ls.grant != e.lock.grant) {
		e.grants[ls.grant].lostAt = -1
		e.activate(e.grants[ls.grant].actor)
	}
	e.lock = ls
	if e.failovers {
		e.snaps = append(e.snaps, snapshot{at: e.now, lock: ls, counter: e.counter})
	}
}

func (e *engine) expire() {
	if e.redlock() {
		e.rlExpire()
		return
	}
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
	for _, i := range e.scan {
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
		if e.redlock() && !a.server {
			e.rlHeal(a)
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
	for _, i := range e.scan {
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
			ai := e.byName[e.steps[si].Actor]
			e.activate(ai)
			e.step(&e.actors[ai], si, false)
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
	if e.redlock() && (len(st.Nodes) > 0 || st.Do == ActFailover || st.Do == ActClockJump || st.Do == ActRestart) {
		e.rlFault(a, st)
		return
	}
	switch st.Do {
	case ActAcquire:
		if e.redlock() {
			e.rlAcquire(a, st)
			return
		}
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
		a.waiting, a.busyUntil, a.paused, a.acquiring = false, 0, false, false
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
