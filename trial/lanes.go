package trial

import (
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/lockctl/lockctl/history"
)

// Lane flags a worker can be in, several at once; lanes folds them into
// history's segments.
const (
	laneDown = iota // exited or killed, not started again yet
	lanePaused
	lanePartitioned
	laneHolds // its owner token is in a lock key
	laneFlags
)

// laneRecorder keeps each worker's flag changes with their times.
type laneRecorder struct {
	start   time.Time
	mu      sync.Mutex
	changes map[int][]laneChange
	state   map[int][laneFlags]bool
	// unheld are the times (ms) of ok writes each worker reported while no
	// lock key held its owner token: drawn as working without the lock.
	unheld map[int][]int64
}

type laneChange struct {
	atMS  int64
	state [laneFlags]bool
}

func newLaneRecorder(start time.Time) *laneRecorder {
	return &laneRecorder{start: start, changes: map[int][]laneChange{}, state: map[int][laneFlags]bool{}, unheld: map[int][]int64{}}
}

// set turns flag on or off for worker from now on.
func (l *laneRecorder) set(worker, flag int, on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.state[worker]
	if st[flag] == on {
		return
	}
	st[flag] = on
	l.state[worker] = st
	l.changes[worker] = append(l.changes[worker], laneChange{time.Since(l.start).Milliseconds(), st})
}

// wrote records an ok write of worker at atMS: marked when the worker held
// no lock key at the last sample.
func (l *laneRecorder) wrote(worker int, atMS int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.state[worker][laneHolds] {
		l.unheld[worker] = append(l.unheld[worker], atMS)
	}
}

// lanes returns workers 1..n's segments up to endMS: crashed, paused,
// partitioned, working with the lock, else idle (running without it); plus
// a 1ms working segment without the lock for each write reported while not
// holding one, which the swimlane draws ▓.
func (l *laneRecorder) lanes(n int, endMS int64) []history.Lane {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]history.Lane, 0, n)
	for w := 1; w <= n; w++ {
		ch := l.changes[w]
		sort.SliceStable(ch, func(i, j int) bool { return ch[i].atMS < ch[j].atMS })
		lane := history.NewLane(WorkerName(w))
		var cur [laneFlags]bool
		from := int64(0)
		for _, c := range append(ch, laneChange{endMS, cur}) {
			if to := min(c.atMS, endMS); c.atMS > from && to > from {
				// Drawn as cut off (~) whether or not it holds the lock.
				lane.Add(from, to, history.Flags{Crashed: cur[laneDown], Paused: cur[lanePaused], Partitioned: cur[lanePartitioned], Working: cur[laneHolds]},
					cur[laneHolds] || cur[lanePartitioned] && !cur[laneDown] && !cur[lanePaused])
			}
			if c.atMS > from {
				from = c.atMS
			}
			cur = c.state
		}
		for _, at := range l.unheld[w] {
			lane.MarkUnheld(at)
		}
		out = append(out, lane)
	}
	return out
}

// WorkerName is worker w's name in lanes, tables and diagrams: "w1"; "-"
// for 0, a worker not known.
func WorkerName(w int) string {
	if w <= 0 {
		return "-"
	}
	return "w" + strconv.Itoa(w)
}

// markStale draws each stale write (history.CodeStaleWrite) as work
// without the lock in its worker's lane: the write was made without it,
// whatever the last sample of the lock keys said (a sampler slowed by load
// still saw the worker's token there).
func markStale(lanes []history.Lane, vs []Violation) {
	for _, v := range vs {
		if v.Code != history.CodeStaleWrite || v.Worker < 1 || v.Worker > len(lanes) {
			continue
		}
		lane := &lanes[v.Worker-1]
		if !slices.ContainsFunc(lane.Segments, func(s history.Segment) bool {
			return s.State == history.LaneWorking && !s.Holds && s.FromMS <= v.AtMS && v.AtMS < max(s.ToMS, s.FromMS+1)
		}) {
			lane.MarkUnheld(v.AtMS)
		}
	}
}
