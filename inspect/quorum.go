package inspect

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redlock finding codes (docs/findings.md, "Redlock").
const (
	FindingNoQuorum        = "NO_QUORUM"
	FindingSplitOwners     = "SPLIT_OWNERS"
	FindingMinorityHolder  = "MINORITY_HOLDER"
	FindingTTLSkew         = "TTL_SKEW"
	FindingNodeUnreachable = "NODE_UNREACHABLE"
)

func init() {
	reasons[FindingNoQuorum] = "nobody holds a Redlock lock without a majority of its nodes; a client that works under it is unprotected, and others cannot acquire until the keys expire"
	reasons[FindingSplitOwners] = "competing acquires each took some nodes: the losers' keys block retries until they expire (redsync and node-redlock release them only when they notice)"
	reasons[FindingMinorityHolder] = "a failed acquire that was not released, or nodes that lost the key (a restart without persistence): the holder must not act on it"
	reasons[FindingTTLSkew] = "the same acquire set the same PX everywhere: a larger gap means a node's clock jumped or one SET arrived late, and the lock ends on a majority earlier than its holder computed"
	reasons[FindingNodeUnreachable] = "a majority is still needed out of all N nodes: with one fewer, losing one more holder may end the lock"
}

// Node is one independent Redis server of a Redlock deployment.
type Node struct {
	// Addr is host:port, as shown.
	Addr   string
	Client redis.UniversalClient
}

// NodeRead is what one node gave for a list of keys.
type NodeRead struct {
	Addr string
	// Locks are one per key, in order; nil when Err is set.
	Locks []Lock
	// Err is the node's read error (a connection refused, a timeout).
	Err error
	// At and Done are the local times the read was sent and answered.
	At, Done time.Time
}

// ReadNodes reads keys on every node at once (Read, one goroutine per node)
// and returns one NodeRead per node, in order. A node that fails has Err
// set; the others are still read. It never sends a write command.
func (r *Reader) ReadNodes(ctx context.Context, nodes []Node, keys []string) []NodeRead {
	out := make([]NodeRead, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := time.Now()
			locks, err := r.Read(ctx, n.Client, keys)
			out[i] = NodeRead{Addr: n.Addr, Locks: locks, Err: err, At: at, Done: time.Now()}
		}()
	}
	wg.Wait()
	return out
}

// quorumBatch is how many keys one ReadNodes call of ReadQuorum reads per
// node: a --pattern over a large keyspace is read in pages, not in one
// pipeline per node.
const quorumBatch = 1000

// NoNodeError is a read that no node answered: Addr and Err are the first
// node's.
type NoNodeError struct {
	Addr string
	Err  error
}

func (e *NoNodeError) Error() string {
	return fmt.Sprintf("no node answered; node %s: %v", e.Addr, e.Err)
}

func (e *NoNodeError) Unwrap() error { return e.Err }

// ReadQuorum reads keys on every node (ReadNodes, quorumBatch keys at a
// time) and analyses each (NewQuorumReport). It returns ctx's error when
// ctx ends, and a *NoNodeError when no node answers a batch; a node that
// fails while others answer is only shown as down.
func (r *Reader) ReadQuorum(ctx context.Context, nodes []Node, keys []string, opts QuorumOptions) (QuorumReport, error) {
	rep := QuorumReport{Locks: make([]QuorumLock, 0, len(keys)), Summary: NewSummary()}
	for start := 0; start < len(keys); start += quorumBatch {
		batch := keys[start:min(start+quorumBatch, len(keys))]
		reads := r.ReadNodes(ctx, nodes, batch)
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if !slices.ContainsFunc(reads, func(nr NodeRead) bool { return nr.Err == nil }) {
			return rep, &NoNodeError{Addr: reads[0].Addr, Err: reads[0].Err}
		}
		for _, l := range NewQuorumReport(batch, reads, opts).Locks {
			rep.Locks = append(rep.Locks, l)
			rep.Summary.Add(&l.Lock)
		}
	}
	return rep, nil
}

// ScanNodes runs Scan (with so) on every node at once and returns the
// merged lock keys (companions left out), sorted, and each node's scan
// error (nil when it finished), in node order. It returns ctx's error when
// ctx ended.
func (r *Reader) ScanNodes(ctx context.Context, nodes []Node, so ScanOptions) ([]string, []error, error) {
	errs := make([]error, len(nodes))
	seen := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.Scan(ctx, n.Client, so, func(l Lock) error {
				if l.Role == "" && l.Exists {
					mu.Lock()
					seen[l.Key] = true
					mu.Unlock()
				}
				return nil
			})
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, errs, ctx.Err()
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, errs, nil
}

// NodeView is one node's part of a Redlock lock in `inspect -o json`.
type NodeView struct {
	Addr   string `json:"addr"`
	Exists bool   `json:"exists"`
	// Owner is the owner token when printable, OwnerHex its bytes in hex.
	Owner    string `json:"owner"`
	OwnerHex string `json:"owner_hex"`
	// PTTLMS is the node's PTTL in ms (-1 no expiry, -2 no key or no answer).
	PTTLMS int64 `json:"pttl_ms"`
	// Error is why the node did not answer; the node then counts for no owner.
	Error string `json:"error,omitempty"`
}

// Quorum is the majority view of one key over N nodes.
type Quorum struct {
	// Owner holds the key on a majority of the N nodes (printable, else
	// hex:...), null when no owner does.
	Owner *string `json:"owner"`
	// Held is the number of nodes holding Owner; with Owner null, the most
	// nodes any one owner holds.
	Held int `json:"held"`
	// Nodes is N, Majority N/2+1, Answered the nodes that answered.
	Nodes    int `json:"nodes"`
	Majority int `json:"majority"`
	Answered int `json:"answered"`
	// State is held, free (on no node that answered), split (two or more
	// owners, none on a majority) or no_quorum.
	State string `json:"state"`
	// ValidityMS is the time left on the majority: the Majority-th largest
	// PTTL among nodes holding Owner, minus DriftMS (0 at least; null with
	// no owner or no TTL).
	ValidityMS *int64 `json:"validity_ms"`
	// DriftMS is the clock drift allowance: 1% of LeaseMS + 2 ms, as the
	// Redis documentation's Redlock and redsync compute it.
	DriftMS int64 `json:"drift_ms"`
	// LeaseMS is the lease DriftMS comes from: QuorumOptions.LeaseMS
	// (--lease), else the largest PTTL read among the owner's nodes.
	LeaseMS int64 `json:"lease_ms"`
}

// Quorum states.
const (
	QuorumHeld     = "held"
	QuorumFree     = "free"
	QuorumSplit    = "split"
	QuorumNoQuorum = "no_quorum"
)

// QuorumLock is one key of `inspect` over Redlock nodes: the Lock as read on
// a representative node (the first holding the quorum's owner, else the
// first where the key exists, else the first that answered), with the
// quorum findings added, then the quorum and each node.
type QuorumLock struct {
	Lock
	Quorum Quorum     `json:"quorum"`
	Nodes  []NodeView `json:"nodes"`
}

// QuorumReport is the result of inspect over Redlock nodes.
type QuorumReport struct {
	Locks   []QuorumLock `json:"locks"`
	Summary Summary      `json:"summary"`
}

// QuorumOptions tune AnalyzeQuorum.
type QuorumOptions struct {
	// LeaseMS is the lease the drift allowance is taken from; 0 takes the
	// largest PTTL among the holder's nodes (a lower bound of the lease).
	LeaseMS int64
	// ErrorText turns a node's error into what is shown (secrets masked);
	// nil uses err.Error().
	ErrorText func(error) string
}

// skewFloorMS is the least TTL_SKEW allowance: the drift of a lease nearly
// run out (taken from what is left) would flag the few ms an acquire takes
// between nodes; 50ms is watch's sampling tolerance.
const skewFloorMS = 50

// Majority is the number of nodes a Redlock owner needs out of n: n/2+1.
func Majority(n int) int { return n/2 + 1 }

// DriftMS is Redlock's clock drift allowance for a lease of leaseMS: 1% of
// it plus 2 ms (Redis documentation, "Distributed Locks with Redis"; redsync
// driftFactor 0.01).
func DriftMS(leaseMS int64) int64 { return leaseMS/100 + 2 }

// NewQuorumReport analyses keys over the nodes' reads (ReadNodes, same key
// order) and counts the summary.
func NewQuorumReport(keys []string, reads []NodeRead, opts QuorumOptions) QuorumReport {
	rep := QuorumReport{Locks: make([]QuorumLock, len(keys)), Summary: NewSummary()}
	for i, k := range keys {
		rep.Locks[i] = AnalyzeQuorum(k, i, reads, opts)
		rep.Summary.Add(&rep.Locks[i].Lock)
	}
	return rep
}

// ownerCount is one owner's nodes: id is the key's type and owner bytes
// (hex), shown the owner as text.
type ownerCount struct {
	id    string
	shown string
	nodes []int
}

// AnalyzeQuorum builds the QuorumLock of keys[i] from every node's read. It
// is pure: reads carry their own times.
func AnalyzeQuorum(key string, i int, reads []NodeRead, opts QuorumOptions) QuorumLock {
	n := len(reads)
	q := QuorumLock{Quorum: Quorum{Nodes: n, Majority: Majority(n)}, Nodes: make([]NodeView, n)}
	var owners []*ownerCount
	rep, firstExists, firstOK := -1, -1, -1
	for j, r := range reads {
		nv := NodeView{Addr: r.Addr, PTTLMS: -2}
		if r.Err != nil || i >= len(r.Locks) {
			nv.Error = errorText(r.Err, opts)
			q.Nodes[j] = nv
			continue
		}
		q.Quorum.Answered++
		l := r.Locks[i]
		nv.Exists, nv.Owner, nv.OwnerHex, nv.PTTLMS = l.Exists, l.Owner, l.OwnerHex, l.PTTLMS
		q.Nodes[j] = nv
		if firstOK < 0 {
			firstOK = j
		}
		if !l.Exists {
			continue
		}
		if firstExists < 0 {
			firstExists = j
		}
		id := l.Type + ":" + l.OwnerHex
		k := slices.IndexFunc(owners, func(o *ownerCount) bool { return o.id == id })
		if k < 0 {
			owners = append(owners, &ownerCount{id: id, shown: shownOwner(l)})
			k = len(owners) - 1
		}
		owners[k].nodes = append(owners[k].nodes, j)
	}
	// The most-held owner first; ties keep node order.
	slices.SortStableFunc(owners, func(a, b *ownerCount) int { return len(b.nodes) - len(a.nodes) })
	var top *ownerCount
	if len(owners) > 0 {
		top = owners[0]
		q.Quorum.Held = len(top.nodes)
	}
	switch {
	case top != nil && len(top.nodes) >= q.Quorum.Majority:
		q.Quorum.Owner, q.Quorum.State = &top.shown, QuorumHeld
		rep = top.nodes[0]
	case top == nil:
		q.Quorum.State = QuorumFree
	case len(owners) > 1:
		q.Quorum.State = QuorumSplit
	default:
		q.Quorum.State = QuorumNoQuorum
	}
	for _, c := range []int{rep, firstExists, firstOK} {
		if c >= 0 {
			rep = c
			break
		}
	}
	if rep >= 0 {
		q.Lock = reads[rep].Locks[i]
		q.Lock.Findings = slices.Clone(q.Lock.Findings)
		q.otherNodesFindings(rep, i, reads)
	} else {
		q.Lock = Lock{Key: key, KeyHex: HexIfNotUTF8(key), Type: "none", PTTLMS: -2, Layout: Layout{Name: "unknown", Confidence: Guess}, Findings: []Finding{}}
	}
	if top != nil {
		q.Quorum.LeaseMS, q.Quorum.ValidityMS = validity(top, reads, i, q.Quorum.Majority, opts.LeaseMS)
		q.Quorum.DriftMS = DriftMS(q.Quorum.LeaseMS)
	}
	q.quorumFindings(owners, reads, i, opts.LeaseMS)
	return q
}

// otherNodesFindings adds the findings of the key on nodes other than rep
// whose code rep's lock lacks (a NO_TTL on one node only), naming the node.
func (q *QuorumLock) otherNodesFindings(rep, i int, reads []NodeRead) {
	for j, r := range reads {
		if j == rep || r.Err != nil || !r.Locks[i].Exists {
			continue
		}
		for _, f := range r.Locks[i].Findings {
			if !slices.ContainsFunc(q.Lock.Findings, func(g Finding) bool { return g.Code == f.Code }) {
				f.Message = "on node " + r.Addr + ": " + f.Message
				q.Lock.Findings = append(q.Lock.Findings, f)
			}
		}
	}
}

func errorText(err error, opts QuorumOptions) string {
	switch {
	case err == nil:
		return "no reply for this key"
	case opts.ErrorText != nil:
		return opts.ErrorText(err)
	}
	return err.Error()
}

// shownOwner is a lock's owner as text: printable, else hex:..., else the
// type of a key with no owner token.
func shownOwner(l Lock) string {
	switch {
	case l.Owner != "":
		return l.Owner
	case l.OwnerHex != "":
		return "hex:" + l.OwnerHex
	}
	return "(a " + l.Type + " with no owner token)"
}

// noExpiry stands for PTTL -1 when sorting: no expiry outlasts any TTL.
const noExpiry = 1<<62 - 1

// validity returns the lease the drift allowance is taken from (leaseMS,
// else the largest TTL among o's nodes) and the time left on the majority
// for owner o: the majority-th largest PTTL among its nodes minus the drift,
// nil when it holds fewer nodes than that or that PTTL is not a TTL.
func validity(o *ownerCount, reads []NodeRead, i, majority int, leaseMS int64) (int64, *int64) {
	pttls := make([]int64, 0, len(o.nodes))
	for _, j := range o.nodes {
		p := reads[j].Locks[i].PTTLMS
		if p == -1 {
			p = noExpiry
		}
		pttls = append(pttls, p)
	}
	slices.SortFunc(pttls, func(a, b int64) int { return cmp.Compare(b, a) })
	if leaseMS <= 0 { // the largest TTL read: a lower bound of the lease
		for _, p := range pttls {
			if p != noExpiry {
				leaseMS = max(p, 0)
				break
			}
		}
	}
	if len(pttls) < majority || pttls[majority-1] < 0 || pttls[majority-1] == noExpiry {
		return leaseMS, nil
	}
	v := max(pttls[majority-1]-DriftMS(leaseMS), 0)
	return leaseMS, &v
}

// quorumFindings adds the Redlock findings to q.Lock; leaseMS (0: unknown)
// sets the TTL_SKEW allowance.
func (q *QuorumLock) quorumFindings(owners []*ownerCount, reads []NodeRead, i int, leaseMS int64) {
	qu := &q.Quorum
	l := &q.Lock
	if qu.State == QuorumNoQuorum || qu.State == QuorumSplit {
		l.add(FindingNoQuorum, SeverityError, "the key is on %d of %d nodes (%d answered) and no owner holds a majority of %d", nodesWithKey(owners), qu.Nodes, qu.Answered, qu.Majority)
	}
	if len(owners) > 1 {
		sev := SeverityError
		if qu.State == QuorumHeld {
			sev = SeverityWarning
		}
		parts := make([]string, len(owners))
		for k, o := range owners {
			parts[k] = fmt.Sprintf("%s on %d", short(o.shown), len(o.nodes))
		}
		l.add(FindingSplitOwners, sev, "%d owners: %s", len(owners), strings.Join(parts, ", "))
	}
	if len(owners) == 1 && qu.State == QuorumNoQuorum {
		l.add(FindingMinorityHolder, SeverityWarning, "%s holds %d of %d nodes, under the majority of %d", short(owners[0].shown), len(owners[0].nodes), qu.Nodes, qu.Majority)
	}
	for _, o := range owners {
		allow := max(DriftMS(cmp.Or(leaseMS, maxPTTL(o, reads, i))), skewFloorMS)
		if gap, ok := skew(o, reads, i); ok && gap > allow {
			l.add(FindingTTLSkew, SeverityWarning, "%s's keys end %dms apart across its %d nodes, over the %dms allowed", short(o.shown), gap, len(o.nodes), allow)
		}
	}
	for j, nv := range q.Nodes {
		if nv.Error != "" {
			l.add(FindingNodeUnreachable, SeverityWarning, "node %s did not answer (%s); the quorum counts the %d of %d that did", reads[j].Addr, nv.Error, qu.Answered, qu.Nodes)
		}
	}
}

func nodesWithKey(owners []*ownerCount) int {
	n := 0
	for _, o := range owners {
		n += len(o.nodes)
	}
	return n
}

func maxPTTL(o *ownerCount, reads []NodeRead, i int) int64 {
	var m int64
	for _, j := range o.nodes {
		m = max(m, reads[j].Locks[i].PTTLMS)
	}
	return m
}

// skew is the least gap (ms) between the expiry instants of o's keys that
// no timing of the reads explains: a key read on [At, Done] with PTTL p
// ends in [At+p, Done+p]. ok is false with fewer than two TTLs.
func skew(o *ownerCount, reads []NodeRead, i int) (int64, bool) {
	var lo, hi []int64 // earliest and latest possible expiry, Unix ms
	for _, j := range o.nodes {
		r := reads[j]
		p := r.Locks[i].PTTLMS
		if p < 0 {
			continue
		}
		lo = append(lo, r.At.UnixMilli()+p)
		hi = append(hi, r.Done.UnixMilli()+p)
	}
	if len(lo) < 2 {
		return 0, false
	}
	return slices.Max(lo) - slices.Min(hi), true
}
