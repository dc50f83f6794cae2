package simulate

import (
	"fmt"
	"slices"
	"time"

	"github.com/lockctl/lockctl/history"
)

// result checks the invariants over the observed intervals: history.CodeOverlap and
// history.CodeLockLost (longer than LiveTolerance), with the violations
// recorded as they happened.
func (r *liveRun) result() LiveResult {
	res := LiveResult{Prefix: r.o.Prefix, TimeScale: r.o.TimeScale, Events: r.events, Violations: r.viol}
	// A key that ran out of TTL, neither released nor deleted by another
	// first: Redis expired it (the run did not watch). One still held at the
	// end (a crashed holder's) expires when its TTL runs out, as in the
	// model, though the run deletes it before that.
	for _, g := range r.grants {
		gone := func(t time.Time) bool { return !t.IsZero() && !t.After(g.expires) }
		if gone(g.releasedAt) || gone(g.lostAt) {
			continue
		}
		note := g.actor + "'s key expired on the server's clock: the lock is free; " + g.actor + " is not told"
		if !g.expires.Before(r.end) {
			note = g.actor + "'s key expires on the server's clock when its TTL left at the end of the run runs out (the run deletes it at its end): the lock is free; " + g.actor + " is not told"
		}
		res.Events = append(res.Events, Event{AtMS: r.virtual(g.expires), Actor: serverActor, Kind: "expire", OK: true, Note: note})
	}
	type span struct {
		from, to time.Time
		actor    string
		grant    *liveGrant
	}
	var active []span
	for _, a := range r.actors {
		for _, s := range a.sections {
			for _, piece := range cutPauses(s.start, s.end, a.pauses) {
				active = append(active, span{piece[0], piece[1], a.name, s.grant})
			}
		}
	}
	for _, s := range active {
		// Without the lease: in a gap a failover closed, or after its end.
		for _, off := range append(slices.Clone(s.grant.gaps), [2]time.Time{s.grant.end(), s.to}) {
			from, to := maxTime(off[0], s.from), minTime(off[1], s.to)
			if to.Sub(from) > LiveTolerance {
				res.Violations = append(res.Violations, Violation{Code: history.CodeLockLost, AtMS: r.virtual(from), Actor: s.actor,
					Message: fmt.Sprintf("%s kept working %s–%s after its lease ended", s.actor, fmtMS(r.virtual(from)), fmtMS(r.virtual(to)))})
				break
			}
		}
	}
	for i, x := range active {
		for _, y := range active[i+1:] {
			if x.actor == y.actor {
				continue
			}
			from, to := maxTime(x.from, y.from), minTime(x.to, y.to)
			if to.Sub(from) > LiveTolerance {
				first, second := x.actor, y.actor
				if y.from.Before(x.from) {
					first, second = second, first
				}
				res.Violations = append(res.Violations, Violation{Code: history.CodeOverlap, AtMS: r.virtual(from), Actor: second,
					Message: fmt.Sprintf("%s and %s both in the critical section %s–%s", first, second, fmtMS(r.virtual(from)), fmtMS(r.virtual(to)))})
			}
		}
	}
	slices.SortStableFunc(res.Violations, func(a, b Violation) int { return int(a.AtMS - b.AtMS) })
	slices.SortStableFunc(res.Events, func(a, b Event) int { return int(a.AtMS - b.AtMS) })
	if res.Violations == nil {
		res.Violations = []Violation{}
	}
	if res.Events == nil {
		res.Events = []Event{}
	}
	res.Verdict = history.VerdictSafe
	if len(res.Violations) > 0 {
		res.Verdict = history.VerdictUnsafe
	}
	return res
}

func cutPauses(from, to time.Time, pauses [][2]time.Time) [][2]time.Time {
	out := [][2]time.Time{{from, to}}
	for _, p := range pauses {
		var next [][2]time.Time
		for _, s := range out {
			if !p[0].Before(s[1]) || !p[1].After(s[0]) {
				next = append(next, s)
				continue
			}
			if p[0].After(s[0]) {
				next = append(next, [2]time.Time{s[0], p[0]})
			}
			if p[1].Before(s[1]) {
				next = append(next, [2]time.Time{p[1], s[1]})
			}
		}
		out = next
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
