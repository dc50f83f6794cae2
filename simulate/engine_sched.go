package simulate

import (
	"container/heap"
	"slices"
)

// The engine's per-instant scans visit only e.scan, the actors that may
// act or change their lane at the instant (sorted by index, so scans keep
// actor order). An actor with nothing pending but its next step is parked
// in e.parked, a min-heap on that step's due time; one with nothing
// pending at all is dropped until a fault or a lock change touches it.
// Every scan is a no-op for a parked or dropped actor, so results are the
// same as scanning every actor; the cost of an instant is what is due.

// dueHeap is the heap of parked actors (indexes into e.actors) by the due
// time of their next step, then step index (file order on ties).
type dueHeap struct {
	e   *engine
	ids []int
}

// due is the time (ms, the actor's clock) and step index of a's next step.
func (e *engine) due(a *actor) (int64, int) {
	si := a.steps[a.next]
	return e.steps[si].AtMS + a.shift, si
}

func (h *dueHeap) Len() int { return len(h.ids) }
func (h *dueHeap) Less(i, j int) bool {
	ti, si := h.e.due(&h.e.actors[h.ids[i]])
	tj, sj := h.e.due(&h.e.actors[h.ids[j]])
	return ti < tj || (ti == tj && si < sj)
}
func (h *dueHeap) Swap(i, j int) {
	h.ids[i], h.ids[j] = h.ids[j], h.ids[i]
	h.e.actors[h.ids[i]].parkedAt = i
	h.e.actors[h.ids[j]].parkedAt = j
}
func (h *dueHeap) Push(x any) {
	i := x.(int)
	h.e.actors[i].parkedAt = len(h.ids)
	h.ids = append(h.ids, i)
}
func (h *dueHeap) Pop() any {
	n := len(h.ids) - 1
	i := h.ids[n]
	h.ids = h.ids[:n]
	h.e.actors[i].parkedAt = -1
	return i
}

// resetSchedule makes every actor active (the first instant and stretch
// look at all of them once).
func (e *engine) resetSchedule() {
	e.parked.e, e.parked.ids = e, e.parked.ids[:0]
	e.scan = e.scan[:0]
	for i := range e.actors {
		e.actors[i].listed, e.actors[i].parkedAt = true, -1
		e.scan = append(e.scan, i)
	}
}

// activate puts actor i back among the scanned ones (a fault hit it or the
// lock it held or gets changed).
func (e *engine) activate(i int) {
	a := &e.actors[i]
	if a.parkedAt >= 0 {
		heap.Remove(&e.parked, a.parkedAt)
	}
	if a.listed {
		return
	}
	a.listed = true
	at, _ := slices.BinarySearch(e.scan, i)
	e.scan = slices.Insert(e.scan, at, i)
}

// unpark activates the parked actors whose next step is due at e.now.
func (e *engine) unpark() {
	for len(e.parked.ids) > 0 {
		if t, _ := e.due(&e.actors[e.parked.ids[0]]); t > e.now {
			return
		}
		e.activate(e.parked.ids[0])
	}
}

// quiet reports whether a has nothing pending but its next step: no scan
// can act on it or change its lane until that step is due.
func (e *engine) quiet(a *actor) bool {
	return !a.paused && !a.waiting && !a.inSection && !a.renewing && a.busyUntil <= e.now && a.partUntil <= e.now &&
		!a.acquiring && !(e.redlock() && e.rlCut(a))
}

// park, after an instant and its stretch, parks or drops the active actors
// that are quiet (crashed actors and the server are dropped).
func (e *engine) park() {
	kept := e.scan[:0]
	for _, i := range e.scan {
		a := &e.actors[i]
		switch {
		case !a.crashed && !a.server && !e.quiet(a):
			kept = append(kept, i)
			continue
		case !a.crashed && !a.server && a.next < len(a.steps):
			heap.Push(&e.parked, i)
		}
		a.listed = false
	}
	e.scan = kept
}

// nextParked is the due time of the first parked actor's next step, or never.
func (e *engine) nextParked() int64 {
	if len(e.parked.ids) == 0 {
		return never
	}
	t, _ := e.due(&e.actors[e.parked.ids[0]])
	return t
}
