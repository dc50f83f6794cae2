package inspect

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Read limits: values past them are read in part and flagged Truncated.
const (
	// DefaultMaxValueBytes bounds a string value read (GETRANGE 0 n-1).
	DefaultMaxValueBytes = 64 << 10
	// DefaultMaxItems bounds hash fields and list/set/zset members read.
	DefaultMaxItems = 128
	// companionBytes bounds a companion key's string value (a counter, a timestamp).
	companionBytes = 256
	// ScanMaxValueBytes is MaxValueBytes for scans (inspect --pattern):
	// a lock value is a few dozen bytes, a page holds thousands of keys.
	ScanMaxValueBytes = 4 << 10
	// PipelineBytes bounds the value bytes one Scan pipeline may bring back
	// (keys × MaxValueBytes): with four readers, peak memory of a scan
	// does not grow with the values' sizes.
	PipelineBytes = 2 << 20
)

// Reader reads lock keys with read-only commands in pipelined round trips:
// round 1 per key TYPE, PTTL, PEXPIRETIME (where the server has it), OBJECT
// IDLETIME and GETRANGE 0 MaxValueBytes-1 (a string value is never read
// past the bound); round 2 STRLEN of the strings that filled the bound, the
// sizes and bounded values of other types (HLEN + HSCAN, LLEN + LRANGE,
// SCARD + SSCAN, ZCARD + ZRANGE 0 MaxItems-1 and ZRANGE -1 -1), the
// detected layouts' companion keys (for an integer string, TYPE alone of
// the zset that makes it a Redisson permit counter) and, after its fence
// counter, a fenced value again (Value.Changed); round 3, only for a
// shared hash lock whose layout names read leases (Declared.ReadLease:
// Redisson's read/write lock), the PTTL of each read holder's lease key.
// It never sends a write command. Safe for concurrent use.
type Reader struct {
	Options       Options
	MaxValueBytes int64
	MaxItems      int64
	// Now is the clock used for expires_at when PEXPIRETIME is missing (nil: time.Now).
	Now func() time.Time
	// Light skips PEXPIRETIME and OBJECT IDLETIME (scans: expires_at then
	// comes from the local clock + PTTL) and sends TYPE only for keys whose
	// GETRANGE says WRONGTYPE (a string or a missing key needs no TYPE).
	Light bool
	// NoCompanions skips the companion keys, for a caller that needs only
	// the keys' own values (unlock: the owner), and no fence counter an
	// ACL scoped to the lock keys (~lock:*) may refuse.
	NoCompanions bool
	// RecheckSubsecond re-reads, for up to 1.1s, a key read with under 1s
	// left and idle 0, so that a lease renewed to 1s or more in that time
	// gets no SUBSECOND_LEASE (recheck.go). For one-shot reads (inspect),
	// not for watch's samples.
	RecheckSubsecond bool

	noPExpireTime atomic.Bool
}

func (r *Reader) maxBytes() int64 {
	if r.MaxValueBytes > 0 {
		return r.MaxValueBytes
	}
	return DefaultMaxValueBytes
}

// pipelineKeys is how many keys one Scan pipeline reads (PipelineBytes).
func (r *Reader) pipelineKeys() int {
	return int(max(1, PipelineBytes/r.maxBytes()))
}

func (r *Reader) maxItems() int64 {
	if r.MaxItems > 0 {
		return r.MaxItems
	}
	return DefaultMaxItems
}

func (r *Reader) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Read inspects keys on c in two pipelined round trips and returns one Lock
// per key, in order. It returns the client's error when the connection
// fails, and a *ReadError when the server refuses a read that decides what
// is at a key (NOPERM, CLUSTERDOWN); WRONGTYPE, and any error on
// PEXPIRETIME or OBJECT IDLETIME, only leave that part of the Lock empty.
func (r *Reader) Read(ctx context.Context, c redis.Cmdable, keys []string) ([]Lock, error) {
	vals, comp, err := r.ReadValues(ctx, c, keys)
	if err != nil {
		return nil, err
	}
	out := make([]Lock, len(keys))
	for i, k := range keys {
		out[i] = Analyze(k, vals[i], comp, r.Options)
	}
	return out, nil
}

type mainCmds struct {
	typ, pttl, pexp, idle, getrange *redis.Cmd
}

// ReadValues is Read without the analysis: the Values at keys and at their
// companion keys.
func (r *Reader) ReadValues(ctx context.Context, c redis.Cmdable, keys []string) ([]Value, map[string]Value, error) {
	if len(keys) == 0 {
		return nil, map[string]Value{}, nil
	}
	now := r.now()
	usePexp := !r.noPExpireTime.Load() && !r.Light
	pipe := c.Pipeline()
	cmds := make([]mainCmds, len(keys))
	max := r.maxBytes()
	for i, k := range keys {
		m := &cmds[i]
		if !r.Light {
			m.typ = pipe.Do(ctx, "type", k)
		}
		m.pttl = pipe.Do(ctx, "pttl", k)
		if usePexp {
			m.pexp = pipe.Do(ctx, "pexpiretime", k)
		}
		if !r.Light {
			m.idle = pipe.Do(ctx, "object", "idletime", k)
		}
		m.getrange = pipe.Do(ctx, "getrange", k, 0, max-1)
	}
	if err := execPipe(ctx, pipe); err != nil {
		return nil, nil, err
	}
	vals := make([]Value, len(keys))
	var untyped []int
	for i, k := range keys {
		m := cmds[i]
		if err := refused(k, m.typ, m.pttl, m.getrange); err != nil {
			return nil, nil, err
		}
		v := Value{ReadAtMS: now.UnixMilli()}
		v.PTTL, _ = m.pttl.Int64()
		if m.typ != nil {
			v.Type, _ = m.typ.Text()
		} else {
			// Light: GETRANGE answers for TYPE on strings and missing keys.
			switch err := m.getrange.Err(); {
			case err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE"):
				untyped = append(untyped, i)
			case v.PTTL == -2:
				v.Type = "none"
			default:
				v.Type = "string"
			}
		}
		if v.Type == "none" {
			v.PTTL = -2
		}
		if m.pexp != nil {
			if err := m.pexp.Err(); err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown command") {
				r.noPExpireTime.Store(true)
			} else if n, err := m.pexp.Int64(); err == nil && n > 0 {
				v.ExpireAtMS, v.ServerExpiry = n, true
			}
		}
		if v.ExpireAtMS == 0 && v.PTTL >= 0 {
			v.ExpireAtMS = now.UnixMilli() + v.PTTL
		}
		if m.idle != nil {
			if n, err := m.idle.Int64(); err == nil {
				v.Idle = ptr(n)
			}
		}
		if v.Type == "string" {
			s, _ := m.getrange.Text()
			v.Bytes = []byte(s)
			v.Size = int64(len(v.Bytes))
		}
		vals[i] = v
	}
	if len(untyped) > 0 {
		tp := c.Pipeline()
		typs := make([]*redis.Cmd, len(untyped))
		for j, i := range untyped {
			typs[j] = tp.Do(ctx, "type", keys[i])
		}
		if err := execPipe(ctx, tp); err != nil {
			return nil, nil, err
		}
		for j, i := range untyped {
			if err := refused(keys[i], typs[j]); err != nil {
				return nil, nil, err
			}
			vals[i].Type, _ = typs[j].Text()
		}
	}
	if r.RecheckSubsecond && !r.Light {
		if err := r.recheckSubsecond(ctx, c, keys, vals); err != nil {
			return nil, nil, err
		}
	}
	comp, err := r.readRound2(ctx, c, keys, vals)
	if err == nil && !r.NoCompanions {
		err = r.readLeases(ctx, c, keys, vals, comp)
	}
	return vals, comp, err
}

type itemCmds struct{ size, items, top *redis.Cmd }

// compCmds are the reads of one companion key. strict: it is the fence
// counter of a lockctl value, which a refused read leaves unknown (an error,
// not "missing"); the other companions are probes for a layout, and one the
// server refuses (an ACL scoped to the lock keys) counts as not there.
// pttl is nil for a key read by TYPE alone (a permit counter's zset), whose
// Value then has PTTL 0 (-2 when missing).
type compCmds struct {
	typ, pttl, get, lrange *redis.Cmd
	strict                 bool
}

// round2 is the second round trip: three kinds of reads queued on one
// pipeline, each with its queue and decode method: items (sizes and
// bounded values past round 1), again (a fenced value read once more)
// and companions (the detected layouts' companion keys).
type round2 struct {
	r         *Reader
	pipe      redis.Pipeliner
	keys      []string
	items     []*itemCmds
	again     []*redis.Cmd
	comps     map[string]*compCmds
	compOrder []string
	queued    int
}

// readRound2 reads the bounded values of non-string keys, the sizes of
// strings that filled the bound, the companion keys and the fenced values
// again in one pipeline, and completes vals.
func (r *Reader) readRound2(ctx context.Context, c redis.Cmdable, keys []string, vals []Value) (map[string]Value, error) {
	q := &round2{r: r, pipe: c.Pipeline(), keys: keys, items: make([]*itemCmds, len(keys)),
		again: make([]*redis.Cmd, len(keys)), comps: map[string]*compCmds{}}
	for i, k := range keys {
		q.queueItems(ctx, i, k, vals[i])
		if !r.NoCompanions && q.queueCompanions(ctx, k, vals[i]) {
			q.queueAgain(ctx, i, k)
		}
	}
	if q.queued == 0 {
		return map[string]Value{}, nil
	}
	if err := execPipe(ctx, q.pipe); err != nil {
		return nil, err
	}
	if err := q.decodeItems(vals); err != nil {
		return nil, err
	}
	if err := q.decodeAgain(vals); err != nil {
		return nil, err
	}
	return q.decodeCompanions()
}

// queueItems queues STRLEN of a string that filled the bound, or the size
// and a bounded read of a hash, list, set or zset.
func (q *round2) queueItems(ctx context.Context, i int, k string, v Value) {
	n, p := q.r.maxItems(), q.pipe
	var ic *itemCmds
	switch v.Type {
	case "string":
		if int64(len(v.Bytes)) >= q.r.maxBytes() {
			ic = &itemCmds{size: p.Do(ctx, "strlen", k)}
		}
	case "hash":
		ic = &itemCmds{size: p.Do(ctx, "hlen", k), items: p.Do(ctx, "hscan", k, 0, "count", n)}
	case "list":
		ic = &itemCmds{size: p.Do(ctx, "llen", k), items: p.Do(ctx, "lrange", k, 0, n-1)}
	case "set":
		ic = &itemCmds{size: p.Do(ctx, "scard", k), items: p.Do(ctx, "sscan", k, 0, "count", n)}
	case "zset":
		// The top member too: a semaphore's newest holder dates its lease.
		ic = &itemCmds{size: p.Do(ctx, "zcard", k), items: p.Do(ctx, "zrange", k, 0, n-1, "withscores"),
			top: p.Do(ctx, "zrange", k, -1, -1, "withscores")}
	}
	if ic != nil {
		q.items[i] = ic
		q.queued++
	}
}

// decodeItems sets the sizes, bounded values and Truncated of vals.
func (q *round2) decodeItems(vals []Value) error {
	n := q.r.maxItems()
	for i, ic := range q.items {
		if ic == nil {
			continue
		}
		if err := refused(q.keys[i], ic.size, ic.items, ic.top); err != nil {
			return err
		}
		v := &vals[i]
		size, err := ic.size.Int64()
		if err == nil && size == 0 && v.Type != "string" {
			// Redis deletes an emptied hash, list, set or zset: the key
			// expired (or was deleted) since round 1. Its fields are
			// gone, so it is absent, not a hash no library writes.
			*v = Value{Type: "none", PTTL: -2}
			continue
		}
		v.Size = size
		switch v.Type {
		case "string":
			v.Truncated = v.Size > int64(len(v.Bytes))
		case "hash":
			v.Fields = pairs(scanItems(ic.items), n)
			v.Truncated = v.Size > int64(len(v.Fields))
		case "set":
			v.Items = capItems(scanItems(ic.items), n)
			v.Truncated = v.Size > int64(len(v.Items))
		case "zset":
			v.Items, v.Top = zsetItems(ic.items), zsetItems(ic.top)
			v.Truncated = v.Size > int64(len(v.Items)/2)
		default:
			v.Items, _ = ic.items.StringSlice()
			v.Truncated = v.Size > int64(len(v.Items))
		}
	}
	return nil
}

// queueCompanions queues TYPE, PTTL and a bounded read of each companion
// key of the layouts v may be, once per key: a key met again in another
// role gets the reads that role adds. It reports whether v carries a fence
// token (companions), to be read again after its counter.
func (q *round2) queueCompanions(ctx context.Context, k string, v Value) bool {
	cks, fenced := companions(k, v, q.r.Options)
	for _, c := range cks {
		ck := c.Key
		// The seed platform's sibling counter is a probe unless configured.
		probe := ck == microiSibling(k) && ck != q.r.Options.fenceKey(k)
		strict := c.Role == RoleFence && !probe && v.Type == "string"
		cc, ok := q.comps[ck]
		if !ok {
			cc = &compCmds{typ: q.pipe.Do(ctx, "type", ck)}
			q.comps[ck] = cc
			q.compOrder = append(q.compOrder, ck)
			q.queued++
		}
		cc.strict = cc.strict || strict
		if c.Role == RolePermitTimeouts || c.Role == roleNeighbour {
			continue // every integer key a scan meets has these probes: one read, not three
		}
		if cc.pttl == nil {
			cc.pttl = q.pipe.Do(ctx, "pttl", ck)
		}
		switch {
		case c.Role == RoleQueue:
			if cc.lrange == nil {
				cc.lrange = q.pipe.Do(ctx, "lrange", ck, 0, q.r.maxItems()-1)
			}
		case c.Get || c.Role == RoleFence || c.Role == RoleDigest || c.Role == RolePermits:
			if cc.get == nil {
				cc.get = q.pipe.Do(ctx, "getrange", ck, 0, companionBytes-1)
			}
		}
	}
	return fenced
}

// decodeCompanions returns the companion keys' Values; a refused read is an
// error only for a strict one.
func (q *round2) decodeCompanions() (map[string]Value, error) {
	out := map[string]Value{}
	for _, ck := range q.compOrder {
		cc := q.comps[ck]
		if err := refused(ck, cc.typ, cc.pttl, cc.get, cc.lrange); err != nil {
			if cc.strict {
				return nil, err
			}
			continue
		}
		v := Value{}
		v.Type, _ = cc.typ.Text()
		if cc.pttl != nil {
			v.PTTL, _ = cc.pttl.Int64()
		}
		if v.Type == "none" {
			v.PTTL = -2
		}
		if cc.get != nil {
			if s, err := cc.get.Text(); err == nil {
				v.Bytes = []byte(s)
			}
		}
		if cc.lrange != nil {
			if l, err := cc.lrange.StringSlice(); err == nil {
				v.Items = l
			}
		}
		out[ck] = v
	}
	return out, nil
}

// queueAgain reads a fenced value (of a layout that issues a fence token:
// lockctl's, the seed platform's, a declared one) once more, after its
// fence counter: a counter above the holder's fence is FENCE_MISMATCH only
// if no acquire came between.
func (q *round2) queueAgain(ctx context.Context, i int, k string) {
	q.again[i] = q.pipe.Do(ctx, "getrange", k, 0, q.r.maxBytes()-1)
	q.queued++
}

// decodeAgain sets Changed on the values read differently the second time.
func (q *round2) decodeAgain(vals []Value) error {
	for i, c := range q.again {
		if c == nil {
			continue
		}
		if err := refused(q.keys[i], c); err != nil {
			return err
		}
		if now, _ := c.Text(); now != string(vals[i].Bytes) {
			vals[i].Changed = true
		}
	}
	return nil
}

// ReadError is a read the server refused with an error reply that leaves
// what is at Key unknown: NOPERM (the ACL denies the command or the key),
// CLUSTERDOWN, MASTERDOWN and the like. Taken for an empty reply, it would
// show an existing lock as ABSENT, or a held one as CONSTANT_OWNER.
type ReadError struct {
	Command string
	Key     string
	Err     error
}

func (e *ReadError) Error() string { return fmt.Sprintf("%s %q: %v", e.Command, e.Key, e.Err) }

func (e *ReadError) Unwrap() error { return e.Err }

// refused returns a ReadError for the first of cmds (nil ones skipped) with
// an error reply other than WRONGTYPE, which the key's type explains (a
// GETRANGE on a hash). PEXPIRETIME and OBJECT IDLETIME are never passed:
// without them the expiry is estimated and the idle time left out.
func refused(key string, cmds ...*redis.Cmd) error {
	for _, c := range cmds {
		if c == nil {
			continue
		}
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) && !strings.HasPrefix(err.Error(), "WRONGTYPE") {
			return &ReadError{Command: strings.ToUpper(c.Name()), Key: key, Err: err}
		}
	}
	return nil
}

// scanItems returns the elements of an HSCAN/SSCAN reply [cursor, [items...]].
func scanItems(c *redis.Cmd) []string {
	res, err := c.Slice()
	if err != nil || len(res) != 2 {
		return nil
	}
	raw, _ := res[1].([]any)
	out := make([]string, 0, len(raw))
	for _, x := range raw {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func pairs(flat []string, n int64) [][2]string {
	out := make([][2]string, 0, len(flat)/2)
	for i := 0; i+1 < len(flat) && int64(len(out)) < n; i += 2 {
		out = append(out, [2]string{flat[i], flat[i+1]})
	}
	return out
}

func capItems(items []string, n int64) []string {
	if int64(len(items)) > n {
		return items[:n]
	}
	return items
}

// execPipe runs a pipeline and returns only transport errors: a server's
// error reply to one command (WRONGTYPE, unknown command) stays on that command.
func execPipe(ctx context.Context, pipe redis.Pipeliner) error {
	cmds, err := pipe.Exec(ctx)
	if err == nil {
		return nil
	}
	// go-redis returns a refused AUTH on a new connection only here, with
	// the queued commands left empty (no error, no reply).
	if !errors.Is(err, redis.Nil) && !isReplyError(err) {
		return err
	}
	for _, c := range cmds {
		if e := c.Err(); e != nil && !errors.Is(e, redis.Nil) && !isReplyError(e) {
			return e
		}
	}
	return nil
}

func isReplyError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !isTransport(err)
}

// isTransport tells connection-level failures that go-redis also reports
// through its Error interface (auth and permission refusals included: a
// NOPERM on one command is a reply error, on AUTH it is not).
func isTransport(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "NOAUTH") || strings.HasPrefix(msg, "WRONGPASS") || strings.HasPrefix(msg, "LOADING")
}
