package simulate

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/lockctl/lockctl/history"
)

// The faults of Redlock nodes, the per-node view of the timeline and the
// Redlock parts of the engine's schedule (engine_redlock.go holds the
// algorithm).

// NodeView is one Redlock node after an event: its number (1-based), the
// holder of its key and the key's PTTL in ms on the node's clock (both
// empty when it has none), and whether it is down.
type NodeView struct {
	Node   int    `json:"node"`
	Holder string `json:"holder,omitempty"`
	PTTLMS int64  `json:"pttl_ms,omitempty"`
	Down   bool   `json:"down,omitempty"`
}

// rlView is the quorum's view (the holder on a majority, the time left on
// that majority: the majority-th largest PTTL, and its fence; nil when no
// one holds a majority) and every node's.
func (e *engine) rlView() (*LockView, []NodeView) {
	nv := make([]NodeView, len(e.nodes))
	count := map[int][]int64{}
	for k := range e.nodes {
		n := &e.nodes[k]
		nv[k] = NodeView{Node: k + 1, Down: n.down}
		if n.lock.present {
			pttl := max(n.lock.expires-e.nodeNow(k), 0)
			nv[k].Holder, nv[k].PTTLMS = e.actors[e.grants[n.lock.grant].actor].name, pttl
			count[n.lock.grant] = append(count[n.lock.grant], pttl)
		}
	}
	q := quorum(len(e.nodes))
	for g, pttls := range count {
		if len(pttls) >= q {
			slices.SortFunc(pttls, func(a, b int64) int { return cmp.Compare(b, a) })
			return &LockView{Holder: e.actors[e.grants[g].actor].name, PTTLMS: pttls[q-1], Fence: e.grants[g].fence}, nv
		}
	}
	return nil, nv
}

// rlFault plays a node-targeted fault (crash, restart, failover,
// clock_jump) or a partition from some nodes.
func (e *engine) rlFault(a *actor, st *Step) {
	mask := e.stepNodes(st)
	switch st.Do {
	case ActPartition:
		if a.crashed {
			return
		}
		for k := range e.nodes {
			if mask&(1<<k) != 0 {
				e.rla[a.index].cut[k] = max(e.rla[a.index].cut[k], e.now+st.ForMS)
			}
		}
		if e.record {
			e.event(a.name, "partition", true, 0, noted("cut off from "+nodeList(mask)+" for "+fmtMS(st.ForMS)+"; work goes on", st.Note))
		}
		return
	case ActCrash:
		for k := range e.nodes {
			if mask&(1<<k) != 0 {
				// Its keys stay counted until they would expire: no one
				// can take them while it is down, and a restart empties it.
				e.nodes[k].down = true
			}
		}
		e.nodeEvent(st, func() string {
			return nodeList(mask) + " crashed: it answers no one; without persistence it restarts empty"
		})
	case ActRestart:
		for k := range e.nodes {
			if mask&(1<<k) != 0 {
				e.setNode(k, lockState{})
				e.nodes[k].down = false
			}
		}
		e.nodeEvent(st, func() string { return nodeList(mask) + " restarted empty: the keys it held are gone" })
	case ActFailover:
		cut := e.now - e.replicationLag()
		for k := range e.nodes {
			if mask&(1<<k) == 0 || e.nodes[k].down {
				continue
			}
			restored := lockState{}
			for i := len(e.nodes[k].snaps) - 1; i >= 0; i-- {
				if e.nodes[k].snaps[i].at <= cut {
					restored = e.nodes[k].snaps[i].lock
					break
				}
			}
			e.setNode(k, restored)
		}
		e.nodeEvent(st, func() string {
			return nodeList(mask) + ": replica promoted; writes of the last " + fmtMS(e.replicationLag()) + " are lost"
		})
	case ActClockJump:
		for k := range e.nodes {
			if mask&(1<<k) != 0 {
				e.nodes[k].jump += st.ByMS
			}
		}
		e.nodeEvent(st, func() string {
			return "the clock of " + nodeList(mask) + " steps forward " + fmtMS(st.ByMS) + ": its keys end early"
		})
	}
	e.rlExpire()
}

// nodeEvent records a node fault with its note (built only when recording).
func (e *engine) nodeEvent(st *Step, note func() string) {
	if e.record {
		e.event(serverActor, string(st.Do), true, 0, noted(note(), st.Note))
	}
}

// rlHeal records a's link to nodes coming back at e.now.
func (e *engine) rlHeal(a *actor) {
	var healed uint16
	for k := range e.nodes {
		if e.rla[a.index].cut[k] == e.now && e.now > 0 {
			healed |= 1 << k
		}
	}
	if healed != 0 && e.record {
		e.event(a.name, "heal", true, 0, a.name+" can reach "+nodeList(healed)+" again")
	}
}

// rlNextTime is the next Redlock instant after e.now: a key's expiry on its
// node's clock, or one of the scanned actors' links coming back.
func (e *engine) rlNextTime() int64 {
	t := never
	consider := func(v int64) {
		if v > e.now && v < t {
			t = v
		}
	}
	for k := range e.nodes {
		if e.nodes[k].lock.present {
			consider(e.nodes[k].lock.expires - e.nodes[k].jump)
		}
	}
	for _, i := range e.scan {
		for _, c := range e.rla[i].cut[:len(e.nodes)] {
			consider(c)
		}
	}
	return t
}

// rlCut reports whether a is cut off from a node until later.
func (e *engine) rlCut(a *actor) bool {
	return slices.ContainsFunc(e.rla[a.index].cut[:len(e.nodes)], func(c int64) bool { return c > e.now })
}

// checkNodes refuses what a scenario's nodes cannot mean (checkStepNodes),
// a fence counter in Redis over N nodes (there is no single INCR), and a
// lease no longer than Redlock's drift allowance (lease ms).
func (sc *Scenario) checkNodes(p leaseParams) error {
	if sc.Nodes < 0 || sc.Nodes > MaxNodes {
		return fmt.Errorf("nodes %d is not one of 1 to %d", sc.Nodes, MaxNodes)
	}
	n := max(sc.Nodes, 1)
	for i, st := range sc.Steps {
		if err := checkStepNodes(n, st); err != nil {
			return fmt.Errorf("event %d (%s at %s): %w", i+1, st.Do, fmtMS(st.AtMS), err)
		}
	}
	if n == 1 {
		return nil
	}
	if sc.FenceSource == FenceRedis {
		return redisFenceError(n)
	}
	if p.lease <= p.margin {
		return fmt.Errorf("lease %s is not above Redlock's drift allowance of %s (1%% of the lease + 2ms): no acquire could succeed", fmtMS(p.lease), fmtMS(p.margin))
	}
	return nil
}

func redisFenceError(n int) error {
	return fmt.Errorf("fence source redis over %d Redlock nodes: there is no single INCR, and per-node counters disagree after a restart or partition; use store (one durable counter at the store)", n)
}

// checkStepNodes refuses a step's nodes in a scenario of n nodes:
// node-targeted events with one node, a node past n, restart without a
// node, and nodes on an action that takes none.
func checkStepNodes(n int, st Step) error {
	if len(st.Nodes) > 0 && n == 1 {
		return fmt.Errorf("%s targets a node, but the scenario has one node; set nodes: 3 (or more) for Redlock", st.Do)
	}
	for _, k := range st.Nodes {
		if k < 1 || k > n {
			return fmt.Errorf("node %d is not one of 1 to %d (nodes: %d)", k, n, n)
		}
	}
	switch {
	case n == 1 && st.Do == ActRestart:
		return fmt.Errorf("restart takes node: K, in a scenario of nodes: 3 or more")
	case n == 1:
	case len(st.Nodes) > 0 && !slices.Contains([]Action{ActPartition, ActCrash, ActRestart, ActFailover, ActClockJump}, st.Do):
		return fmt.Errorf("%s takes no node", st.Do)
	case len(st.Nodes) == 0 && (st.Do == ActRestart || st.Do == ActFailover || st.Do == ActClockJump):
		return fmt.Errorf("in a %d-node scenario %s needs node: K or nodes: [..]", n, st.Do)
	case len(st.Nodes) > 0 && st.Do == ActCrash && st.Actor != "" && st.Actor != serverActor:
		return fmt.Errorf("a crash hits an actor or nodes, not both")
	}
	return nil
}

// rlActor is an actor's Redlock state: its acquire in flight (start ms,
// grant, the nodes that took it with bit k for node k+1, the end of its
// wait) and when its link to each node comes back (ms).
type rlActor struct {
	start, waitUntil int64
	grant            int
	taken            uint16
	cut              [MaxNodes]int64
}

// resetRedlockActors gives each actor of a Redlock run an empty rlActor
// (none with one server), reusing the buffer of a previous run.
func (e *engine) resetRedlockActors() {
	n := 0
	if e.redlock() {
		n = len(e.actors)
	}
	if cap(e.rla) < n {
		e.rla = make([]rlActor, n)
		return
	}
	e.rla = e.rla[:n]
	clear(e.rla)
}

// resetNodes gives a Redlock run its nodes, up, empty and on time (none
// for one server); it reuses the buffers of a previous run.
func (e *engine) resetNodes() {
	n := e.sc.Nodes
	if n <= 1 {
		e.nodes = e.nodes[:0]
		return
	}
	for len(e.nodes) < n {
		e.nodes = append(e.nodes, rnode{})
	}
	e.nodes = e.nodes[:n]
	for k := range e.nodes {
		e.nodes[k] = rnode{snaps: e.nodes[k].snaps[:0]}
	}
}

// redlockNotes are the limits of a Redlock run: where its fence comes from,
// and what a node's clock jump or empty restart does to the majority.
func redlockNotes(sc *Scenario, res *Result, has func(Action) bool) []string {
	out := []string{}
	if !sc.Guards.Fencing {
		out = append(out, "Redlock issues no fencing token: the fence shown comes from one durable counter at the store, and the store compares it only with --fencing (Kleppmann 2016)")
	}
	if has(ActClockJump) {
		out = append(out, "Redlock assumes every node's clock runs at about the same rate: a node whose clock jumps ends its key early, the holder's majority can pass to another process, and no client can see it (Kleppmann 2016)")
	}
	if has(ActRestart) || has(ActCrash) && slices.ContainsFunc(sc.Steps, func(s Step) bool { return s.Do == ActCrash && s.Actor == serverActor }) {
		out = append(out, "a node that restarts empty forgets the keys it held: the majority can pass to another process unless the node stays down longer than the longest lease (antirez's delayed restart) or syncs every write to disk")
	}
	if res.Verdict == history.VerdictUnsafe && slices.ContainsFunc(res.Violations, func(v Violation) bool { return v.Code == history.CodeOverlap }) {
		out = append(out, "two processes held a majority at once: only a write boundary that refuses the older fence keeps the store correct (docs/redlock-debate.md)")
	}
	return out
}

// nodeNumber reads a node count or number the schema made a whole number
// (YAML may write it 0x5 or 5e0): decimal digits up to MaxNodes' width, or
// a *FileError naming field.
func nodeNumber(v *yaml.Node, field string) (int, error) {
	k, err := strconv.Atoi(v.Value)
	if err != nil || k > 1000 {
		return 0, &FileError{Line: v.Line, Field: field, Msg: fmt.Sprintf("%q is not a number from 1 to %d in decimal digits", v.Value, MaxNodes)}
	}
	return k, nil
}

// decodeNodeList reads an event's nodes: [..] (whole numbers from 1, as the
// schema made them), refusing one listed twice.
func decodeNodeList(v *yaml.Node, field string) ([]int, error) {
	var ks []int
	for _, c := range v.Content {
		k, err := nodeNumber(c, field)
		if err != nil {
			return nil, err
		}
		if slices.Contains(ks, k) {
			return nil, &FileError{Line: c.Line, Field: field, Msg: fmt.Sprintf("node %d is listed twice", k)}
		}
		ks = append(ks, k)
	}
	return ks, nil
}

// decodeNodes checks a file's events against its nodes (checkStepNodes)
// and sets its fence source and fencing guard over Redlock nodes: the
// store's counter (fence_source redis is refused with the reason), and
// fencing off unless the file turns it on (Redlock issues no token).
func decodeNodes(sc *Scenario, fencingSet bool, fenceSourceLine int) error {
	n := max(sc.Nodes, 1)
	for i, st := range sc.Steps {
		if err := checkStepNodes(n, st); err != nil {
			field := fmt.Sprintf("events[%d]", i)
			if len(st.Nodes) > 0 {
				field += ".node"
			}
			return &FileError{Line: st.Line, Field: field, Msg: err.Error()}
		}
	}
	if n == 1 {
		return nil
	}
	if fenceSourceLine > 0 && sc.FenceSource == FenceRedis {
		return &FileError{Line: fenceSourceLine, Field: "fence_source", Msg: redisFenceError(n).Error()}
	}
	sc.FenceSource = FenceStore
	if !fencingSet {
		sc.Guards.Fencing = false
	}
	return nil
}

// LiveRefusal is why a scenario cannot run live, or nil: live mode replays
// on one server, and N independent nodes with their own clocks, crashes
// and partitions would need N servers and per-node fault injection.
func LiveRefusal(sc Scenario) error {
	if sc.Nodes > 1 {
		return fmt.Errorf("scenario %q has %d Redlock nodes; live mode (--redis) replays on one server, so run it on the virtual clock (drop --redis)", sc.Name, sc.Nodes)
	}
	return nil
}
