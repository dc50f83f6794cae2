package inspect

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// DefaultScanCount is the SCAN COUNT hint: large, so a million keys take
// two hundred round trips instead of redis-cli's hundred thousand (one call
// walks ~5000 entries, about a millisecond of server time).
const DefaultScanCount = 5000

// ScanFloor is the least number of keyspace entries a scan of one server
// may walk before it is stopped (ScanBoundError); see scanBound.
const ScanFloor = 10_000_000

// ScanBoundError is a scan stopped because the server's cursor did not come
// back to 0 within the bound (scanBound): a server that never ends a scan
// (a hostile or broken one) would otherwise be scanned forever, with the
// keys it returns piling up. What was found before is emitted.
type ScanBoundError struct {
	// Addr is the server scanned (host:port), Walked the entries walked
	// (each SCAN call counts COUNT, or the keys it returned if more),
	// DBSize its DBSIZE at the start (-1: unknown) and Bound the limit.
	Addr                  string
	Walked, DBSize, Bound int64
}

func (e *ScanBoundError) Error() string {
	return fmt.Sprintf("SCAN on %s walked about %d entries without its cursor coming back to 0 (bound %d = max(2 x DBSIZE %d, %d)): the server does not end the scan, the list is partial", e.Addr, e.Walked, e.Bound, e.DBSize, ScanFloor)
}

// scanBound is the number of entries a scan of a server of dbSize keys may
// walk: a full SCAN takes about DBSIZE/COUNT calls of COUNT entries each
// (Redis' dictScan), twice that leaves room for a keyspace that doubles
// while it is scanned, and the floor for a table left sparse by deletions
// (a call then walks up to 10 x COUNT empty buckets).
func scanBound(dbSize int64) int64 { return max(2*dbSize, ScanFloor) }

// ScanOptions select the keys Scan reads.
type ScanOptions struct {
	// Pattern is the SCAN MATCH glob ("lock:*").
	Pattern string
	// Count is the SCAN COUNT hint (0: DefaultScanCount).
	Count int64
	// Limit stops after this many matching keys (0: no limit).
	Limit int
	// Progress, when set, is called after each SCAN page with the keys the
	// server walked so far (an estimate: COUNT per page).
	Progress func(walked int64)
}

// Scan walks the keyspace with SCAN MATCH (never KEYS) on every primary of
// a cluster (ForEachMaster) or on the one server, reads each page of
// matching keys with Read (two pipelined round trips; on a cluster through
// the cluster client, which follows MOVED and ASK) while the next page
// is being fetched, and calls emit for each Lock, from one goroutine at a
// time. When ctx is cancelled (Ctrl-C) it stops fetching pages, finishes the
// pages in flight and returns ctx's error with what was emitted; it returns
// the client's error when the connection fails, emit's error if it fails,
// and a *ScanBoundError, with what was emitted, when a server's cursor does
// not come back to 0 within scanBound.
func (r *Reader) Scan(ctx context.Context, c redis.UniversalClient, so ScanOptions, emit func(Lock) error) error {
	var mu sync.Mutex
	var matched atomic.Int64
	var walked atomic.Int64
	safeEmit := func(l Lock) error {
		mu.Lock()
		defer mu.Unlock()
		return emit(l)
	}
	st := &scanState{r: r, so: so, emit: safeEmit, matched: &matched, walked: &walked}
	if cc, ok := c.(*redis.ClusterClient); ok {
		// ForEachMaster would stop at ctx's cancellation before a node is
		// done; the scan loop watches ctx itself.
		// Keys are read through the cluster client, which follows MOVED
		// and ASK: a companion key on another primary's slot, or a slot
		// migrating during the scan, is read where it is.
		err := cc.ForEachMaster(context.WithoutCancel(ctx), func(_ context.Context, node *redis.Client) error {
			return st.scanNode(ctx, node, cc, node.Options().Addr)
		})
		if err == nil {
			err = ctx.Err()
		}
		return err
	}
	addr := "the server"
	if sc, ok := c.(*redis.Client); ok {
		addr = sc.Options().Addr
	}
	if err := st.scanNode(ctx, c, c, addr); err != nil {
		return err
	}
	return ctx.Err()
}

type scanState struct {
	r       *Reader
	so      ScanOptions
	emit    func(Lock) error
	matched *atomic.Int64
	walked  *atomic.Int64
}

func (st *scanState) limitReached() bool {
	return st.so.Limit > 0 && st.matched.Load() >= int64(st.so.Limit)
}

// scanWorkers read and decode pages in parallel with the SCAN loop.
const scanWorkers = 4

// scanNode scans one server (c) and reads the keys through read: one
// goroutine fetches SCAN pages, scanWorkers read and decode them, so the
// next page is on the wire while the last is decoded. It stops with a
// *ScanBoundError past scanBound.
func (st *scanState) scanNode(ctx context.Context, c, read redis.Cmdable, addr string) error {
	count := st.so.Count
	if count <= 0 {
		count = DefaultScanCount
	}
	readCtx := context.WithoutCancel(ctx)
	dbSize, err := c.DBSize(readCtx).Result()
	if err != nil { // an ACL may refuse DBSIZE: the floor alone bounds the scan
		dbSize = -1
	}
	bound := scanBound(dbSize)
	pages := make(chan []string, 2)
	var scanErr error
	go func() {
		defer close(pages)
		var cursor uint64
		var walked int64
		for {
			if ctx.Err() != nil || st.limitReached() {
				return
			}
			keys, next, err := c.Scan(readCtx, cursor, st.so.Pattern, count).Result()
			if err != nil {
				scanErr = err
				return
			}
			if st.so.Progress != nil {
				st.so.Progress(st.walked.Add(count))
			}
			if len(keys) > 0 {
				pages <- keys
			}
			if next == 0 {
				return
			}
			if walked += max(count, int64(len(keys))); walked > bound {
				scanErr = &ScanBoundError{Addr: addr, Walked: walked, DBSize: dbSize, Bound: bound}
				return
			}
			cursor = next
		}
	}()
	var wg sync.WaitGroup
	var firstErr error
	var errMu sync.Mutex
	fail := func(err error) {
		errMu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		errMu.Unlock()
	}
	for range scanWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for keys := range pages {
				// A page is read in parts of PipelineBytes: memory does not grow with the values.
				for len(keys) > 0 && !st.limitReached() {
					part := keys[:min(len(keys), st.r.pipelineKeys())]
					keys = keys[len(part):]
					if err := st.readPart(readCtx, read, part); err != nil {
						fail(err)
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	if scanErr != nil {
		return scanErr
	}
	return firstErr
}

// readPart reads keys and emits the Locks that exist, up to the limit.
func (st *scanState) readPart(ctx context.Context, read redis.Cmdable, keys []string) error {
	locks, err := st.r.Read(ctx, read, keys)
	if err != nil {
		return err
	}
	for _, l := range locks {
		if !l.Exists {
			continue // expired between SCAN and the read
		}
		if n := st.matched.Add(1); st.so.Limit > 0 && n > int64(st.so.Limit) {
			return nil
		}
		if err := st.emit(l); err != nil {
			return err
		}
	}
	return nil
}

// SortByTTL orders locks by remaining TTL: the soonest to expire first,
// then keys without a TTL, then absent keys; ties by key (CompareTTL),
// equal ones in their order.
func SortByTTL(locks []Lock) {
	sort.SliceStable(locks, func(i, j int) bool { return CompareTTL(&locks[i], &locks[j]) < 0 })
}

// CompareTTL is SortByTTL's order: negative when a comes before b,
// positive after, 0 for the same rank, TTL and key.
func CompareTTL(a, b *Lock) int {
	ra, ta := TTLRank(a)
	rb, tb := TTLRank(b)
	switch {
	case ra != rb:
		return ra - rb
	case ta < tb:
		return -1
	case ta > tb:
		return 1
	}
	return strings.Compare(a.Key, b.Key)
}

// TTLRank is l's place in CompareTTL's order before its key: 0 and the
// TTL (ms) for a key with one, 1 and 0 for none, 2 and 0 for an absent key.
func TTLRank(l *Lock) (int, int64) {
	switch {
	case l.PTTLMS >= 0:
		return 0, l.PTTLMS
	case l.PTTLMS == -1:
		return 1, 0
	}
	return 2, 0
}

// GlobEscape escapes the SCAN MATCH metacharacters * ? [ ] \ so a value is
// matched literally. It works on bytes, as Redis's glob does: bytes that are
// not UTF-8 pass through unchanged.
func GlobEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[]\`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
