package inspect

import (
	"context"
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
// the client's error when the connection fails and emit's error if it fails.
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
			return st.scanNode(ctx, node, cc)
		})
		if err == nil {
			err = ctx.Err()
		}
		return err
	}
	if err := st.scanNode(ctx, c, c); err != nil {
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
// next page is on the wire while the last is decoded.
func (st *scanState) scanNode(ctx context.Context, c, read redis.Cmdable) error {
	count := st.so.Count
	if count <= 0 {
		count = DefaultScanCount
	}
	readCtx := context.WithoutCancel(ctx)
	pages := make(chan []string, 2)
	var scanErr error
	go func() {
		defer close(pages)
		var cursor uint64
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
// then keys without a TTL, then absent keys; ties by key.
func SortByTTL(locks []Lock) {
	rank := func(l *Lock) (int, int64) {
		switch {
		case l.PTTLMS >= 0:
			return 0, l.PTTLMS
		case l.PTTLMS == -1:
			return 1, 0
		}
		return 2, 0
	}
	sort.SliceStable(locks, func(i, j int) bool {
		ri, ti := rank(&locks[i])
		rj, tj := rank(&locks[j])
		if ri != rj {
			return ri < rj
		}
		if ti != tj {
			return ti < tj
		}
		return locks[i].Key < locks[j].Key
	})
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
