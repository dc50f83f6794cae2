package history

import (
	"slices"
	"sort"
)

// Lane state names of a Segment.
const (
	LaneIdle        = "idle"
	LaneWorking     = "working"
	LanePaused      = "paused"
	LanePartitioned = "partitioned"
	LaneCall        = "call"
	LaneCrashed     = "crashed"
)

// Segment is one stretch [FromMS, ToMS) of a holder in one state, in ms
// since the run's start.
type Segment struct {
	FromMS int64  `json:"from_ms"`
	ToMS   int64  `json:"to_ms"`
	State  string `json:"state"`
	// Holds is true when the holder's key is really the lock's on the server.
	Holds bool `json:"holds"`
}

// Lane is one holder's (an actor's, a worker's) segments in time order.
type Lane struct {
	Actor    string    `json:"actor"`
	Segments []Segment `json:"segments"`
}

// NewLane returns actor's lane with no segment yet (its JSON is [], not null).
func NewLane(actor string) Lane { return Lane{Actor: actor, Segments: []Segment{}} }

// Flags is what a holder is doing over a stretch, several at once; State
// folds them into one lane state.
type Flags struct {
	Crashed     bool // exited or killed, not started again yet
	Paused      bool // frozen (SIGSTOP, a GC pause)
	Call        bool // in the critical section, blocked in a call
	Partitioned bool // in the critical section, cut off from the lock's server
	Working     bool // in the critical section
}

// State is the lane state of f, the most telling first: crashed, paused,
// call, partitioned, working, else idle.
func (f Flags) State() string {
	switch {
	case f.Crashed:
		return LaneCrashed
	case f.Paused:
		return LanePaused
	case f.Call:
		return LaneCall
	case f.Partitioned:
		return LanePartitioned
	case f.Working:
		return LaneWorking
	}
	return LaneIdle
}

// Add records the holder in state f over [fromMS, toMS), holding the lock
// or not. The last segment is stretched to fromMS when it ended before (the
// holder was unchanged since), and merged with the new stretch when alike.
func (l *Lane) Add(fromMS, toMS int64, f Flags, holds bool) {
	state := f.State()
	k := len(l.Segments)
	if k > 0 && l.Segments[k-1].ToMS < fromMS {
		l.Segments[k-1].ToMS = fromMS
	}
	if k > 0 && l.Segments[k-1].State == state && l.Segments[k-1].Holds == holds && l.Segments[k-1].ToMS == fromMS {
		l.Segments[k-1].ToMS = toMS
		return
	}
	l.Segments = append(l.Segments, Segment{FromMS: fromMS, ToMS: toMS, State: state, Holds: holds})
}

// Close stretches the last segment to endMS when it ended before.
func (l *Lane) Close(endMS int64) {
	if k := len(l.Segments); k > 0 && l.Segments[k-1].ToMS < endMS {
		l.Segments[k-1].ToMS = endMS
	}
}

// MarkUnheld inserts a 1 ms working segment without the lock at atMS, in
// order of FromMS: a write reported while the holder held no lock key,
// which a swimlane draws as working without it.
func (l *Lane) MarkUnheld(atMS int64) {
	i := sort.Search(len(l.Segments), func(i int) bool { return l.Segments[i].FromMS > atMS })
	l.Segments = slices.Insert(l.Segments, i, Segment{FromMS: atMS, ToMS: atMS + 1, State: LaneWorking})
}
