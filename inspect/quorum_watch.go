package inspect

import (
	"fmt"
	"time"
)

// Redlock watch events (docs/redlock.md, "watch"): per node, the Event
// kinds of Differ plus NODE_DOWN and NODE_UP; for the quorum the ones below.
const (
	// EventQuorumHeld and EventQuorumFree describe the first sample.
	EventQuorumHeld = "QUORUM_HELD"
	EventQuorumFree = "QUORUM_FREE"
	// EventQuorumAcquired: an owner now holds a majority (after none, or
	// after another owner: PreviousOwner is set).
	EventQuorumAcquired = "QUORUM_ACQUIRED"
	// EventQuorumLost: the owner that held a majority no longer does.
	EventQuorumLost = "QUORUM_LOST"
	// EventSplit: two or more owners now hold the key on some nodes.
	EventSplit = "SPLIT"
	// EventNodeDown and EventNodeUp: a node stopped or started answering.
	EventNodeDown = "NODE_DOWN"
	EventNodeUp   = "NODE_UP"
)

// QuorumEvent is one line of `lockctl watch -o jsonl` over Redlock nodes:
// an Event with the node it happened on ("" for a quorum event) and, for a
// quorum event, the nodes holding the owner out of how many.
type QuorumEvent struct {
	Event
	Node  string `json:"node,omitempty"`
	Held  int    `json:"held"`
	Nodes int    `json:"nodes"`
}

// QuorumDiffer derives events for one key from successive reads of all its
// nodes: each node's own Differ, and the quorum's owner and split. Next is
// deterministic (no clock, no I/O).
type QuorumDiffer struct {
	qopts   QuorumOptions
	nodes   []*Differ
	down    []bool
	started bool
	owner   string // the quorum's owner (shown), "" for none
	split   bool
}

// NewQuorumDiffer returns a QuorumDiffer for n nodes; qopts' ErrorText
// shows a node's error in NODE_DOWN.
func NewQuorumDiffer(n int, opts WatchOptions, qopts QuorumOptions) *QuorumDiffer {
	d := &QuorumDiffer{qopts: qopts, nodes: make([]*Differ, n), down: make([]bool, n)}
	for i := range d.nodes {
		d.nodes[i] = NewDiffer(opts)
	}
	return d
}

// Next returns the events of keys[i] in reads (one NodeRead per node, in
// node order, as ReadNodes returns them).
func (d *QuorumDiffer) Next(key string, i int, reads []NodeRead) []QuorumEvent {
	ql := AnalyzeQuorum(key, i, reads, d.qopts)
	var out []QuorumEvent
	for j, r := range reads {
		if r.Err != nil {
			if !d.down[j] {
				d.down[j] = true
				ev := QuorumEvent{Event: Event{At: rfc3339ms(r.At), Key: key, KeyHex: HexIfNotUTF8(key), Event: EventNodeDown, PTTLMS: -2,
					Message: "no answer: " + ql.Nodes[j].Error}, Node: r.Addr, Nodes: len(reads)}
				out = append(out, ev)
			}
			continue
		}
		if d.down[j] {
			d.down[j] = false
			out = append(out, QuorumEvent{Event: Event{At: rfc3339ms(r.At), Key: key, KeyHex: HexIfNotUTF8(key), Event: EventNodeUp, PTTLMS: r.Locks[i].PTTLMS,
				Message: "answers again"}, Node: r.Addr, Nodes: len(reads)})
		}
		s := SampleOf(r.Locks[i], r.At)
		s.Done = r.Done
		for _, e := range d.nodes[j].Next(s) {
			out = append(out, QuorumEvent{Event: e, Node: r.Addr, Nodes: len(reads)})
		}
	}
	return append(out, d.quorumEvents(ql, reads)...)
}

// quorumEvents compares the quorum of ql with the last one.
func (d *QuorumDiffer) quorumEvents(ql QuorumLock, reads []NodeRead) []QuorumEvent {
	qu := ql.Quorum
	owner := ""
	if qu.Owner != nil {
		owner = *qu.Owner
	}
	split := len(distinctOwners(ql.Nodes)) > 1
	at := reads[0].At
	for _, r := range reads {
		at = maxTime(at, r.At)
	}
	ev := func(kind, format string, args ...any) QuorumEvent {
		e := QuorumEvent{Event: Event{At: rfc3339ms(at), Key: ql.Key, KeyHex: ql.KeyHex, Event: kind, Owner: owner, PTTLMS: -2}, Held: qu.Held, Nodes: qu.Nodes}
		if qu.ValidityMS != nil {
			e.PTTLMS = *qu.ValidityMS
		}
		e.Message = fmt.Sprintf(format, args...)
		return e
	}
	var out []QuorumEvent
	prevOwner, prevSplit, first := d.owner, d.split, !d.started
	d.owner, d.split, d.started = owner, split, true
	counted := fmt.Sprintf("%d of %d nodes (majority %d, %d answered)", qu.Held, qu.Nodes, qu.Majority, qu.Answered)
	switch {
	case first && owner != "":
		out = append(out, ev(EventQuorumHeld, "held by %s on %s", owner, counted))
	case first && qu.Held == 0:
		out = append(out, ev(EventQuorumFree, "no node holds it (%d of %d answered)", qu.Answered, qu.Nodes))
	case first:
		out = append(out, ev(EventQuorumFree, "no owner on a majority: most held %s", counted))
	case owner != "" && prevOwner == "":
		out = append(out, ev(EventQuorumAcquired, "%s holds %s", owner, counted))
	case owner != "" && owner != prevOwner:
		e := ev(EventQuorumAcquired, "%s took the majority from %s with no gap seen: %s", owner, prevOwner, counted)
		e.PreviousOwner = prevOwner
		out = append(out, e)
	case owner == "" && prevOwner != "":
		e := ev(EventQuorumLost, "%s no longer holds a majority: most held %s", prevOwner, counted)
		e.PreviousOwner = prevOwner
		out = append(out, e)
	}
	if split && (!prevSplit || first) {
		out = append(out, ev(EventSplit, "%d owners on its nodes: %s", len(distinctOwners(ql.Nodes)), ownersLine(ql.Nodes)))
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// distinctOwners are the owners (hex) of the nodes holding the key, in node order.
func distinctOwners(nodes []NodeView) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range nodes {
		if n.Exists && !seen[n.OwnerHex] {
			seen[n.OwnerHex] = true
			out = append(out, n.OwnerHex)
		}
	}
	return out
}

// ownersLine is "a on 2, b on 2" for the nodes holding the key.
func ownersLine(nodes []NodeView) string {
	count := map[string]int{}
	shown := map[string]string{}
	for _, n := range nodes {
		if n.Exists {
			count[n.OwnerHex]++
			shown[n.OwnerHex] = show(n.Owner)
			if n.Owner == "" {
				shown[n.OwnerHex] = "hex:" + n.OwnerHex
			}
		}
	}
	line := ""
	for _, h := range distinctOwners(nodes) {
		if line != "" {
			line += ", "
		}
		line += fmt.Sprintf("%s on %d", short(shown[h]), count[h])
	}
	return line
}
