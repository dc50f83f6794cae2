package trial

import (
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/lockctl/lockctl/simulate"
)

// Lane flags a worker can be in, several at once; lanes folds them into
// simulate's segments.
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
func (l *laneRecorder) lanes(n int, endMS int64) []simulate.Lane {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]simulate.Lane, 0, n)
	for w := 1; w <= n; w++ {
		ch := l.changes[w]
		sort.SliceStable(ch, func(i, j int) bool { return ch[i].atMS < ch[j].atMS })
		lane := simulate.Lane{Actor: workerName(w), Segments: []simulate.Segment{}}
		var cur [laneFlags]bool
		from := int64(0)
		for _, c := range append(ch, laneChange{endMS, cur}) {
			if c.atMS > from {
				lane.Segments = appendSegment(lane.Segments, segmentOf(from, min(c.atMS, endMS), cur))
				from = c.atMS
			}
			cur = c.state
		}
		for _, at := range l.unheld[w] {
			lane.Segments = insertSegment(lane.Segments, simulate.Segment{FromMS: at, ToMS: at + 1, State: simulate.LaneWorking})
		}
		out = append(out, lane)
	}
	return out
}

// insertSegment puts s among segs in order of FromMS.
func insertSegment(segs []simulate.Segment, s simulate.Segment) []simulate.Segment {
	i := sort.Search(len(segs), func(i int) bool { return segs[i].FromMS > s.FromMS })
	return slices.Insert(segs, i, s)
}

func segmentOf(from, to int64, st [laneFlags]bool) simulate.Segment {
	s := simulate.Segment{FromMS: from, ToMS: to, State: simulate.LaneIdle, Holds: st[laneHolds]}
	switch {
	case st[laneDown]:
		s.State = simulate.LaneCrashed
	case st[lanePaused]:
		s.State = simulate.LanePaused
	case st[lanePartitioned]:
		// Drawn as cut off (~) whether or not it holds the lock.
		s.State, s.Holds = simulate.LanePartitioned, true
	case st[laneHolds]:
		s.State = simulate.LaneWorking
	}
	return s
}

// appendSegment merges s into the last segment when they are alike.
func appendSegment(segs []simulate.Segment, s simulate.Segment) []simulate.Segment {
	if s.ToMS <= s.FromMS {
		return segs
	}
	if n := len(segs); n > 0 && segs[n-1].State == s.State && segs[n-1].Holds == s.Holds && segs[n-1].ToMS == s.FromMS {
		segs[n-1].ToMS = s.ToMS
		return segs
	}
	return append(segs, s)
}

// workerName is worker w's actor name in lanes and tables: "w1".
func workerName(w int) string {
	if w <= 0 {
		return "?"
	}
	return "w" + strconv.Itoa(w)
}
