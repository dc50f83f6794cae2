package simulate

import (
	"fmt"
	"slices"

	"github.com/lockctl/lockctl/history"
)

func (e *engine) active(a *actor) bool {
	return !a.server && a.inSection && !a.crashed && !a.paused
}

// accumulate checks the invariants that hold over a stretch of time,
// [from, to), during which nothing changes: history.CodeOverlap and
// history.CodeLockLost. to == never closes every open interval. It costs
// one pass over the actors plus the pairs of actors in the critical section
// (not all pairs: 5,000 actors made that 25 million a step).
func (e *engine) accumulate(from, to int64) {
	if to <= from {
		return
	}
	closing := to == never
	e.live = e.live[:0]
	for _, i := range e.scan {
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
	if closing && e.record {
		e.closeLanes(from)
	}
}

// closeLanes ends at end (ms) the last segment of each lane left open while
// its actor was parked or dropped (its state did not change since).
func (e *engine) closeLanes(end int64) {
	for i := range e.lanes {
		e.lanes[i].Close(end)
	}
}

// lockLost opens or closes a's history.CodeLockLost interval at from.
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
			e.violations = append(e.violations, Violation{Code: history.CodeLockLost, AtMS: start, Actor: a.name,
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

// overlaps opens an history.CodeOverlap interval at from for each new pair of actors in
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
			e.violations = append(e.violations, Violation{Code: history.CodeOverlap, AtMS: e.open[k], Actor: second.name,
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
	f := history.Flags{Crashed: a.crashed, Paused: a.paused, Working: a.inSection,
		Call: a.inSection && a.busyUntil > from && a.busyKind == ActCall, Partitioned: a.inSection && e.partitioned(a)}
	e.lanes[a.lane].Add(from, to, f, e.held(a))
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
	var nv []NodeView
	if e.redlock() {
		lv, nv = e.rlView()
	} else if e.lock.present {
		g := e.grants[e.lock.grant]
		lv = &LockView{Holder: e.actors[g.actor].name, PTTLMS: max(e.lock.expires-e.serverNow(), 0), Fence: g.fence}
	}
	if k := len(e.events); k > 0 && kind == "renew" {
		last := &e.events[k-1]
		if last.Kind == kind && last.Actor == actorName && last.OK == ok && last.Note == note {
			last.Count = max(last.Count, 1) + 1
			last.UntilMS = e.now
			last.Lock, last.Nodes = lv, nv
			last.StoreFence = e.storeHighest
			return
		}
	}
	e.events = append(e.events, Event{AtMS: e.now, Actor: actorName, Kind: kind, OK: ok, Fence: fence, Lock: lv, Nodes: nv, StoreFence: e.storeHighest, Note: note})
}
