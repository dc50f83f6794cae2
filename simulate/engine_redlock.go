package simulate

import (
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// Redlock (a scenario of nodes: N > 1): the same key on N independent Redis
// nodes, acquired, renewed and released as the Redis documentation
// ("Distributed locks with Redis") describes it and redsync and node-redlock
// implement it: SET NX PX on every node, success on a majority within the
// validity time (lease − elapsed − drift, drift = 1% of the lease + 2 ms),
// release of what was taken on failure. Each node keeps its own clock and
// can crash, restart empty, fail over or jump; a process can be cut off from
// some nodes only.

// MaxNodes is the most Redlock nodes a scenario may have (lockctl's
// redis+redlock:// URLs take 3 to 9).
const MaxNodes = 9

// rnode is one Redlock node: its key (expiry on its own clock), how far its
// clock is ahead, whether it is down, and its lock history for a failover.
type rnode struct {
	lock  lockState
	jump  int64
	down  bool
	snaps []snapshot
}

func quorum(n int) int { return n/2 + 1 }

// redlock reports whether the run has more than one node.
func (e *engine) redlock() bool { return len(e.nodes) > 0 }

func (e *engine) nodeNow(k int) int64 { return e.now + e.nodes[k].jump }

// reach reports whether a can talk to node k (0-based).
func (e *engine) reach(a *actor, k int) bool {
	return !e.nodes[k].down && a.partUntil <= e.now && e.rla[a.index].cut[k] <= e.now
}

// holding counts the nodes whose key is grant g's.
func (e *engine) holding(g int) int {
	n := 0
	for k := range e.nodes {
		if e.nodes[k].lock.present && e.nodes[k].lock.grant == g {
			n++
		}
	}
	return n
}

func (e *engine) rlHeld(a *actor) bool {
	return a.grant >= 0 && e.holding(a.grant) >= quorum(len(e.nodes))
}

// setNode replaces node k's key; a grant that falls below a majority is
// marked lost at e.now.
func (e *engine) setNode(k int, ls lockState) {
	n := &e.nodes[k]
	old := n.lock
	n.lock = ls
	if e.failovers {
		n.snaps = append(n.snaps, snapshot{at: e.now, lock: ls})
	}
	if old.present && (!ls.present || ls.grant != old.grant) {
		g := &e.grants[old.grant]
		if g.lostAt < 0 && e.holding(old.grant) < quorum(len(e.nodes)) {
			g.lostAt = e.now
		}
		e.activate(g.actor)
	}
	if ls.present {
		e.activate(e.grants[ls.grant].actor)
	}
}

// nodeList is "node 3" or "nodes 1, 2, 3" for the 0-based nodes of mask.
func nodeList(mask uint16) string {
	var ks []string
	for k := range MaxNodes {
		if mask&(1<<k) != 0 {
			ks = append(ks, strconv.Itoa(k+1))
		}
	}
	if len(ks) == 1 {
		return "node " + ks[0]
	}
	return "nodes " + strings.Join(ks, ", ")
}

// stepNodes is the 0-based mask of a step's nodes (every node when it names none).
func (e *engine) stepNodes(st *Step) uint16 {
	if len(st.Nodes) == 0 {
		return 1<<len(e.nodes) - 1
	}
	var m uint16
	for _, k := range st.Nodes {
		m |= 1 << (k - 1)
	}
	return m
}

// rlExpire ends the keys whose time is up on their node's clock, one event
// per holder.
func (e *engine) rlExpire() {
	var gone []uint16
	var who []int
	for k := range e.nodes {
		n := &e.nodes[k]
		if !n.lock.present || n.lock.expires > e.nodeNow(k) {
			continue
		}
		g := n.lock.grant
		e.setNode(k, lockState{})
		if !e.record {
			continue
		}
		i := slices.Index(who, g)
		if i < 0 {
			who, gone = append(who, g), append(gone, 0)
			i = len(who) - 1
		}
		gone[i] |= 1 << k
	}
	for i, g := range who {
		name := e.actors[e.grants[g].actor].name
		e.event(serverActor, "expire", true, 0, fmt.Sprintf("%s's key expired on %s (its clock); %s holds %d of %d, %s is not told",
			name, nodeList(gone[i]), name, e.holding(g), len(e.nodes), name))
	}
}

// rlAcquire is the first SET NX PX round of an acquire step; the quorum
// check follows when a runs again (rlDecide), after a pause if one froze it
// while the replies were in flight.
func (e *engine) rlAcquire(a *actor, st *Step) {
	if a.inSection {
		e.skip(a, st, "skipped: "+a.name+" already holds the lock")
		return
	}
	r := &e.rla[a.index]
	r.waitUntil = 0
	if st.WaitMS > 0 {
		r.waitUntil = e.now + st.WaitMS
	}
	e.rlSend(a, "")
}

// rlSend sends SET NX PX with a fresh owner token to every node a reaches.
func (e *engine) rlSend(a *actor, how string) {
	gi := len(e.grants)
	e.grants = append(e.grants, grant{actor: a.index, at: e.now, lostAt: -1})
	r := &e.rla[a.index]
	a.acquiring, r.start, r.grant, r.taken = true, e.now, gi, 0
	var cut, held uint16
	holders := []string{}
	for k := range e.nodes {
		n := &e.nodes[k]
		switch {
		case !e.reach(a, k):
			cut |= 1 << k
		case n.lock.present:
			held |= 1 << k
			if h := e.actors[e.grants[n.lock.grant].actor].name; !slices.Contains(holders, h) {
				holders = append(holders, h)
			}
		default:
			e.setNode(k, lockState{present: true, grant: gi, expires: e.nodeNow(k) + e.p.lease})
			r.taken |= 1 << k
		}
	}
	if !e.record {
		return
	}
	taken := bits.OnesCount16(r.taken)
	note := fmt.Sprintf("SET NX PX %s on %d nodes: OK on %d", fmtMS(e.p.lease), len(e.nodes), taken)
	if taken > 0 {
		note += " (" + nodeList(r.taken) + ")"
	}
	if held != 0 {
		note += "; " + nodeList(held) + " held by " + strings.Join(holders, ", ")
	}
	if cut != 0 {
		note += "; " + nodeList(cut) + " unreachable"
	}
	if how != "" {
		note += "; " + how
	}
	e.event(a.name, "acquire", taken >= quorum(len(e.nodes)), 0, note)
}

// rlDecide runs the quorum check of one acquire whose replies are in and
// whose actor runs (not paused).
func (e *engine) rlDecide() bool {
	if !e.redlock() {
		return false
	}
	for _, i := range e.scan {
		if a := &e.actors[i]; a.acquiring && !a.paused && !a.crashed {
			a.acquiring = false
			e.rlQuorum(a)
			return true
		}
	}
	return false
}

// rlQuorum is Redlock's check: a majority of nodes and a positive validity
// (lease − elapsed − drift, drift = lease/100 + 2 ms, lockcore.CancelMargin's
// formula); on failure it releases what it took (owner-checked, as every
// implementation's unlock script) and retries while its wait lasts.
func (e *engine) rlQuorum(a *actor) {
	r := &e.rla[a.index]
	q, taken := quorum(len(e.nodes)), bits.OnesCount16(r.taken)
	elapsed := e.now - r.start
	validity := e.p.lease - elapsed - e.p.margin
	calc := func() string {
		return fmt.Sprintf("%d of %d, quorum %d; validity %s − %s elapsed − %s drift = %s", taken, len(e.nodes), q,
			fmtMS(e.p.lease), fmtMS(elapsed), fmtMS(e.p.margin), signedMS(validity))
	}
	if taken >= q && validity > 0 {
		e.counter++
		gi := r.grant
		e.grants[gi].fence, e.grants[gi].lostAt = e.counter, -1
		if e.holding(gi) < q {
			e.grants[gi].lostAt = e.now
		}
		a.inSection, a.cancelled, a.sectionStart = true, false, e.now
		a.grant, a.fence, a.acquiredAt = gi, e.counter, r.start
		a.validUntil = r.start + e.p.lease - e.p.margin
		a.renewing, a.nextRenew = e.p.renewable, r.start+e.p.renewEvery
		a.lostOpen = -1
		if e.record {
			e.event(a.name, "quorum", true, a.fence, calc()+": acquired; fence "+strconv.FormatInt(a.fence, 10)+" from the store's counter")
		}
		return
	}
	var freed, stuck uint16
	for k := range e.nodes {
		if r.taken&(1<<k) == 0 || !e.nodes[k].lock.present || e.nodes[k].lock.grant != r.grant {
			continue
		}
		if !e.reach(a, k) {
			stuck |= 1 << k
			continue
		}
		e.setNode(k, lockState{})
		freed |= 1 << k
	}
	retry := r.waitUntil > e.now
	if e.record {
		note := calc() + ": failed"
		if freed != 0 {
			note += "; released " + nodeList(freed)
		}
		if stuck != 0 {
			note += "; " + nodeList(stuck) + " unreachable: its key stays there until it expires"
		}
		if retry {
			note += "; retrying for up to " + fmtMS(r.waitUntil-e.now)
		}
		e.event(a.name, "quorum", false, 0, note)
	}
	if retry {
		a.waiting, a.waitUntil, a.waitFrom = true, r.waitUntil, e.now
	}
}

func signedMS(v int64) string {
	if v < 0 {
		return "−" + fmtMS(-v)
	}
	return fmtMS(v)
}

// rlFree reports whether a majority of the nodes a reaches are free: a
// waiter's retry could then succeed.
func (e *engine) rlFree(a *actor) bool {
	n := 0
	for k := range e.nodes {
		if e.reach(a, k) && !e.nodes[k].lock.present {
			n++
		}
	}
	return n >= quorum(len(e.nodes))
}

// rlRenew extends a's key on every node it reaches (owner-checked, or a
// blind PEXPIRE); a majority keeps the lease, as redsync's Extend.
func (e *engine) rlRenew(a *actor, auto bool) {
	q := quorum(len(e.nodes))
	var ok, cut uint16
	foreign := ""
	for k := range e.nodes {
		n := &e.nodes[k]
		switch {
		case !e.reach(a, k):
			cut |= 1 << k
		case n.lock.present && (n.lock.grant == a.grant || !e.g.OwnerCheck):
			if n.lock.grant != a.grant && foreign == "" {
				foreign = e.actors[e.grants[n.lock.grant].actor].name
			}
			e.setNode(k, lockState{present: true, grant: n.lock.grant, expires: e.nodeNow(k) + e.p.lease})
			ok |= 1 << k
		}
	}
	if bits.OnesCount16(ok) >= q {
		a.validUntil = e.now + e.p.lease - e.p.margin
		a.nextRenew = e.now + e.p.renewEvery
		if e.record {
			e.event(a.name, "renew", true, 0, "PEXPIRE "+fmtMS(e.p.lease)+" on "+nodeList(ok))
		}
		if foreign != "" {
			e.violate(bitForeignRenew, a.name, func() string {
				return fmt.Sprintf("%s's blind renewal extended %s's key on some nodes; %s believes it still holds the lock", a.name, foreign, a.name)
			})
		}
		return
	}
	if len(e.nodes)-bits.OnesCount16(cut) < q {
		if auto {
			a.nextRenew = e.now + e.p.retry
		}
		if e.record {
			e.event(a.name, "renew", false, 0, "cannot reach a majority ("+nodeList(cut)+" unreachable); retry in "+fmtMS(e.p.retry))
		}
		return
	}
	a.renewing = false
	e.renewRefused(a, fmt.Sprintf("refused: extended on %d of %d nodes, quorum %d", bits.OnesCount16(ok), len(e.nodes), q), "renewal refused by a majority")
}

// rlRelease deletes a's key on every node it reaches (owner-checked or a
// blind DEL); unreachable nodes keep it until it expires.
func (e *engine) rlRelease(a *actor, st *Step) {
	if a.grant < 0 {
		e.skip(a, st, "skipped: nothing to release")
		return
	}
	defer func() { e.endSection(a); a.grant = -1 }()
	var mine, refused, blind, cut uint16
	other := ""
	for k := range e.nodes {
		n := &e.nodes[k]
		switch {
		case !e.reach(a, k):
			cut |= 1 << k
		case !n.lock.present:
		case n.lock.grant == a.grant:
			e.setNode(k, lockState{})
			mine |= 1 << k
		default:
			other = e.actors[e.grants[n.lock.grant].actor].name
			if e.g.OwnerCheck {
				refused |= 1 << k
				continue
			}
			e.setNode(k, lockState{})
			blind |= 1 << k
		}
	}
	if refused != 0 {
		e.act(gOwner, func() string { return "owner check refused " + a.name + "'s release of " + other + "'s key" })
	}
	if e.record {
		parts := []string{}
		if mine != 0 {
			parts = append(parts, "deleted its key on "+nodeList(mine))
		}
		if refused != 0 {
			parts = append(parts, "refused on "+nodeList(refused)+": not owner ("+other+" holds it)")
		}
		if blind != 0 {
			parts = append(parts, "blind DEL deleted "+other+"'s key on "+nodeList(blind))
		}
		if cut != 0 {
			parts = append(parts, nodeList(cut)+" unreachable: the key stays there until it expires")
		}
		if len(parts) == 0 {
			parts = append(parts, "nothing to delete: the key is gone on every node")
		}
		e.event(a.name, "release", mine|blind != 0, 0, strings.Join(parts, "; "))
	}
	if blind != 0 {
		e.violate(bitForeignRelease, a.name, func() string {
			return fmt.Sprintf("%s's blind DEL released %s's key on %s", a.name, other, nodeList(blind))
		})
	}
}
