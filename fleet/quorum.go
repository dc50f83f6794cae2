package fleet

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockctl/lockctl/inspect"
)

// quorumBatch is how many keys one ReadNodes call reads on every node.
const quorumBatch = 500

// QuorumFollower follows the locks matching a pattern over Redlock nodes
// (docs/redlock.md): each pass scans every node at once, each paced to the
// rate as a Follower's pass is, then reads the keys any node holds, and
// those followed, on all nodes at once, one inspect.QuorumDiffer per key.
type QuorumFollower struct {
	reader *inspect.Reader
	nodes  []inspect.Node
	opts   Options
	qopts  inspect.QuorumOptions
	keys   map[string]*inspect.QuorumDiffer
	passes int
}

// NewQuorum returns a QuorumFollower reading with r on nodes; qopts give
// the lease (validity) and how a node's error is shown.
func NewQuorum(r *inspect.Reader, nodes []inspect.Node, opts Options, qopts inspect.QuorumOptions) *QuorumFollower {
	return &QuorumFollower{reader: r, nodes: nodes, opts: opts.withDefaults(), qopts: qopts, keys: map[string]*inspect.QuorumDiffer{}}
}

// Tracked is the number of lock keys followed now.
func (f *QuorumFollower) Tracked() int { return len(f.keys) }

// Run makes passes as Follower.Run does, handing each event to emit and
// calling passDone after each complete pass; it returns emit's error at once.
func (f *QuorumFollower) Run(ctx, until context.Context, emit func(inspect.QuorumEvent) error, passDone func(), onErr func(error) error) error {
	return runPasses(ctx, until, f.opts, func() error {
		err := f.Pass(ctx, emit)
		if err == nil {
			passDone()
		}
		return err
	}, func(d time.Duration) error { return waitBetween(ctx, until, d, nil, nil) }, onErr)
}

// Pass makes one pass. A node that fails is NODE_DOWN for the keys read,
// not a failed pass; the pass fails (the first node's error) only when no
// node finishes its scan. A key no node holds, every node answering, is
// dropped after its events (QUORUM_LOST, each node's RELEASED or EXPIRED).
func (f *QuorumFollower) Pass(ctx context.Context, emit func(inspect.QuorumEvent) error) error {
	start := f.opts.Now()
	f.passes++
	var size int64
	for _, n := range f.nodes {
		size = max(size, dbSize(ctx, n.Client))
	}
	rate := f.opts.rate(size)
	so := inspect.ScanOptions{Pattern: f.opts.Pattern, Count: f.opts.Count, Progress: func(walked int64) {
		if rate > 0 { // each node walks its own keyspace at rate
			pace(ctx, start, min(walked, max(size, 1)), rate, f.opts.Now)
		}
	}}
	met, errs, err := f.reader.ScanNodes(ctx, f.nodes, so)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(errs, func(e error) bool { return e == nil }) {
		return fmt.Errorf("node %s: %w", f.nodes[0].Addr, errs[0])
	}
	keys := met
	for k := range f.keys {
		if _, found := slices.BinarySearch(met, k); !found {
			keys = append(keys, k)
		}
	}
	for batch := range slices.Chunk(keys, quorumBatch) {
		reads := f.reader.ReadNodes(ctx, f.nodes, batch)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for i, k := range batch {
			d := f.keys[k]
			if d == nil {
				d = inspect.NewQuorumDiffer(len(f.nodes), f.opts.Watch, f.qopts)
				f.keys[k] = d
				if f.passes > 1 { // after the first pass a new key is ACQUIRED, not HELD
					d.Next(k, 0, f.absent(k, start))
				}
			}
			for _, e := range d.Next(k, i, reads) {
				if err := emit(e); err != nil {
					return &sinkError{err}
				}
			}
			if nobodyHolds(reads, i) {
				delete(f.keys, k)
			}
		}
	}
	return nil
}

// absent is a read of every node answering that key k is not there.
func (f *QuorumFollower) absent(k string, at time.Time) []inspect.NodeRead {
	reads := make([]inspect.NodeRead, len(f.nodes))
	for j, n := range f.nodes {
		reads[j] = inspect.NodeRead{Addr: n.Addr, At: at, Done: at, Locks: []inspect.Lock{{Key: k, PTTLMS: -2}}}
	}
	return reads
}

// nobodyHolds reports whether every node answered and none holds key i.
func nobodyHolds(reads []inspect.NodeRead, i int) bool {
	for _, r := range reads {
		if r.Err != nil || r.Locks[i].Exists {
			return false
		}
	}
	return true
}
