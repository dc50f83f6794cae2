// Package fleet follows every lock matching a pattern: repeated passes of
// inspect's SCAN, paced to a rate of keyspace entries per second, one
// inspect.Differ per lock key, and the events between passes (ownership
// changes, findings appearing and clearing). `watch --pattern` prints the
// events; the exporter counts them. Nothing here prints, reads flags or
// writes to Redis.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/redis/go-redis/v9"
)

// DefaultTolerance absorbs the time between a key's read and the moment its
// page is decoded (a scan pipelines hundreds of keys): without PEXPIRETIME
// (Light reads) a smaller one would see renewals and TTL jumps in the jitter.
const DefaultTolerance = 500 * time.Millisecond

// Options tune a Follower.
type Options struct {
	// Pattern is the SCAN MATCH glob ("lock:*").
	Pattern string
	// Count is the SCAN COUNT hint (0: inspect.DefaultScanCount).
	Count int64
	// Interval is the least time between the starts of two passes (0: none).
	Interval time.Duration
	// Rate bounds the keyspace entries walked per second, over all servers
	// of a cluster (0: DBSIZE / Interval, so a pass spreads over the
	// interval; without an Interval, no bound).
	Rate int64
	// Watch tunes the Differs (RenewBound; Tolerance 0: DefaultTolerance).
	Watch inspect.WatchOptions
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Pass is what one complete pass saw.
type Pass struct {
	// Started and Ended bound the pass (local clock).
	Started, Ended time.Time
	// Walked estimates the keyspace entries walked (COUNT per SCAN call).
	Walked int64
	// Locks counts the lock keys read (companion keys left out).
	Locks int
}

// Sink receives what a Follower sees, from one goroutine at a time.
type Sink interface {
	// Lock is called for each lock key read in a pass, with how long its
	// current owner has been seen (0 at its first sighting).
	Lock(l *inspect.Lock, held time.Duration)
	// Event is called for each event, in the order derived.
	Event(e inspect.Event) error
	// PassDone is called after each complete pass.
	PassDone(p Pass)
}

// keyState is what is kept per lock key between passes: the Differ, the
// last pass that saw the key and its findings' signature (interned).
type keyState struct {
	d        *inspect.Differ
	pass     uint32
	findings string
}

// companionState is what is kept per companion key: its type and the last
// pass that met it.
type companionState struct {
	typ  string
	pass uint32
}

// Follower follows the locks matching Options.Pattern on one client (a
// server, a Sentinel-managed primary, or every primary of a cluster).
type Follower struct {
	reader     *inspect.Reader
	client     redis.UniversalClient
	opts       Options
	keys       map[string]*keyState
	companions map[string]companionState
	intern     map[string]string
	pass       uint32
}

// New returns a Follower reading with r (Light reads are the scan's) on c.
func New(r *inspect.Reader, c redis.UniversalClient, opts Options) *Follower {
	opts = opts.withDefaults()
	return &Follower{reader: r, client: c, opts: opts, keys: map[string]*keyState{},
		companions: map[string]companionState{}, intern: map[string]string{}}
}

// companion reports whether l is a companion key (a fence counter or a
// queue's key beside its lock), or was one in the pass before and still
// has its type: as inspect.Differ, a companion stays one while it exists,
// though its evidence (a queue's lists) comes and goes.
func (f *Follower) companion(l *inspect.Lock) bool {
	st, was := f.companions[l.Key]
	if l.Role == "" && (!was || st.typ != l.Type) {
		return false
	}
	f.companions[l.Key] = companionState{typ: f.interned(l.Type), pass: f.pass}
	return true
}

// withDefaults fills in Now and the Differs' Tolerance.
func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Watch.Tolerance <= 0 {
		o.Watch.Tolerance = DefaultTolerance
	}
	return o
}

// Tracked is the number of lock keys followed now.
func (f *Follower) Tracked() int { return len(f.keys) }

// Run makes passes until until ends, waiting between their starts for
// Interval; ctx cancels a pass in flight (Ctrl-C), until only ends the loop
// between passes (--duration: the first pass is always made). A failed
// pass is handed to onErr; Run goes on with the next pass when onErr
// returns nil and returns its error otherwise. Run returns ctx's error when
// ctx ends, nil when until ends, and a Sink.Event error at once.
//
// Between passes, when the server sends keyspace notifications (subscribe),
// a key set, given a TTL, deleted or expired is read at once, so its
// events come before the next pass.
func (f *Follower) Run(ctx, until context.Context, sink Sink, onErr func(error) error) error {
	var msgs <-chan *redis.Message
	if ps := subscribe(ctx, f.client, f.opts.Pattern); ps != nil {
		defer ps.Close()
		msgs = ps.Channel()
	}
	onMsg := func(m *redis.Message) error { return f.notified(ctx, m, sink) }
	return runPasses(ctx, until, f.opts, func() error { return f.Pass(ctx, sink) }, func(d time.Duration) error {
		return waitBetween(ctx, until, d, msgs, onMsg)
	}, onErr)
}

// runPasses is Run's loop for any follower: pass, then wait (waitBetween)
// for the rest of opts.Interval, until ctx or until ends.
func runPasses(ctx, until context.Context, opts Options, pass func() error, wait func(time.Duration) error, onErr func(error) error) error {
	for {
		start := opts.Now()
		err := pass()
		var se *sinkError
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &se):
			return se.err
		case err != nil:
			if err := onErr(err); err != nil {
				return err
			}
		}
		err = wait(max(0, opts.Interval-opts.Now().Sub(start)))
		switch {
		case errors.As(err, &se):
			return se.err
		case !errors.Is(err, errPassDue):
			return err
		}
	}
}

// sinkError is a Sink.Event error, which ends Run (stdout closed).
type sinkError struct{ err error }

func (e *sinkError) Error() string { return e.err.Error() }

// Pass makes one pass: SCAN paced to the rate, each lock read and diffed,
// then the keys the pass did not meet are diffed as gone (RELEASED,
// EXPIRED). A pass that fails (the scan's error, returned) does not count
// keys as gone.
func (f *Follower) Pass(ctx context.Context, sink Sink) error {
	f.pass++
	p := Pass{Started: f.opts.Now()}
	size := dbSize(ctx, f.client)
	rate := f.opts.rate(size)
	var walkedAll atomic.Int64 // a cluster's primaries are scanned at once
	so := inspect.ScanOptions{Pattern: f.opts.Pattern, Count: f.opts.Count, Progress: func(walked int64) {
		walkedAll.Store(walked)
		if rate > 0 { // walked counts COUNT per call: a small keyspace is walked in one
			pace(ctx, p.Started, min(walked, max(size, 1)), rate, f.opts.Now)
		}
	}}
	first := f.pass == 1
	err := f.reader.Scan(ctx, f.client, so, func(l inspect.Lock) error {
		if f.companion(&l) {
			return nil
		}
		p.Locks++
		if err := f.see(&l, p.Started, first, sink); err != nil {
			return &sinkError{err}
		}
		return nil
	})
	if err != nil {
		return err
	}
	p.Walked, p.Ended = walkedAll.Load(), f.opts.Now()
	if size > 0 { // COUNT per call overstates a keyspace walked in fewer calls
		p.Walked = min(p.Walked, size)
	}
	maps.DeleteFunc(f.companions, func(_ string, st companionState) bool { return st.pass != f.pass })
	for k, st := range f.keys {
		if st.pass == f.pass {
			continue
		}
		for _, e := range st.d.Next(inspect.Sample{At: p.Ended, Key: k, PTTLMS: -2}) {
			if err := sink.Event(e); err != nil {
				return &sinkError{err}
			}
		}
		delete(f.keys, k)
	}
	sink.PassDone(p)
	return nil
}

// rate is Options.Rate, else size keys per Interval, else 0 (no bound).
func (o Options) rate(size int64) int64 {
	if o.Rate > 0 || o.Interval <= 0 {
		return o.Rate
	}
	if size <= 0 {
		return 0
	}
	return max(1, int64(float64(size)/o.Interval.Seconds()))
}

// dbSize is DBSIZE, summed over a cluster's primaries; 0 when refused.
func dbSize(ctx context.Context, c redis.UniversalClient) int64 {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		n, _ := c.DBSize(ctx).Result()
		return n
	}
	var total atomic.Int64 // ForEachMaster asks the primaries at once
	_ = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		n, _ := node.DBSize(ctx).Result() // an ACL may refuse it: that primary is unpaced
		total.Add(n)
		return nil
	})
	return total.Load()
}

// pace sleeps until walked entries are due at rate per second from start,
// or ctx ends.
func pace(ctx context.Context, start time.Time, walked, rate int64, now func() time.Time) {
	due := start.Add(time.Duration(float64(walked) / float64(rate) * float64(time.Second)))
	d := due.Sub(now())
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// see diffs one lock read by the pass. A key first met after the first pass
// appeared since the pass before: its Differ starts from an absent sample,
// so the event is ACQUIRED rather than HELD.
func (f *Follower) see(l *inspect.Lock, passStart time.Time, first bool, sink Sink) error {
	at := f.opts.Now()
	if err := emitAll(sink, f.diff(l, passStart, at, first)); err != nil {
		return err
	}
	held := time.Duration(0)
	if since := f.keys[l.Key].d.OwnerSince(); !since.IsZero() {
		held = at.Sub(since)
	}
	sink.Lock(l, held)
	return nil
}

// diff returns the events of l read at at, marking it seen by this pass;
// a key not known before is primed as absent at passStart unless first.
func (f *Follower) diff(l *inspect.Lock, passStart, at time.Time, first bool) []inspect.Event {
	st, ok := f.keys[l.Key]
	if !ok {
		st = &keyState{d: inspect.NewDiffer(f.opts.Watch)}
		f.keys[l.Key] = st
		if !first {
			st.d.Next(inspect.Sample{At: passStart, Key: l.Key, PTTLMS: -2})
		}
	}
	st.pass = f.pass
	events := st.d.Next(inspect.SampleOf(*l, at))
	if sig := f.signature(l.Findings); sig != st.findings {
		events = append(events, findingEvents(l, st.findings, at)...)
		st.findings = sig
	}
	return events
}

// signature is the findings' codes and severities, sorted, as one interned
// string ("NO_FENCE:warning,NO_TTL:error"): a few distinct values shared by
// every key.
func (f *Follower) signature(fs []inspect.Finding) string {
	if len(fs) == 0 {
		return ""
	}
	parts := make([]string, len(fs))
	for i, x := range fs {
		parts[i] = x.Code + ":" + string(x.Severity)
	}
	slices.Sort(parts)
	return f.interned(strings.Join(slices.Compact(parts), ","))
}

// interned is s, shared by every key that has it: a few distinct findings
// signatures and type names among many keys.
func (f *Follower) interned(s string) string {
	if i, ok := f.intern[s]; ok {
		return i
	}
	f.intern[s] = s
	return s
}

// findingEvents are FINDING for each finding of l not in the signature
// before, and FINDING_CLEARED for each code of before that l lacks.
func findingEvents(l *inspect.Lock, before string, at time.Time) []inspect.Event {
	had := map[string]bool{}
	if before != "" {
		for _, p := range strings.Split(before, ",") {
			had[p] = true
		}
	}
	var out []inspect.Event
	base := inspect.Event{At: at.UTC().Format("2006-01-02T15:04:05.000Z07:00"), Key: l.Key, KeyHex: inspect.HexIfNotUTF8(l.Key), PTTLMS: l.PTTLMS}
	for _, x := range l.Findings {
		id := x.Code + ":" + string(x.Severity)
		if had[id] {
			delete(had, id)
			continue
		}
		e := base
		e.Event, e.Code, e.Severity = inspect.EventFinding, x.Code, string(x.Severity)
		e.Message = fmt.Sprintf("%s (%s): %s", x.Code, x.Severity, x.Message)
		out = append(out, e)
		had[id] = false // a code listed twice is one event
	}
	for _, id := range slices.Sorted(maps.Keys(had)) {
		if !had[id] {
			continue
		}
		code, sev, _ := strings.Cut(id, ":")
		e := base
		e.Event, e.Code, e.Severity = inspect.EventFindingCleared, code, sev
		e.Message = code + " cleared"
		out = append(out, e)
	}
	return out
}
