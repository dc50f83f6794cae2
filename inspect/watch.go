package inspect

import (
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/lockctl/lockctl/history"
	"github.com/lockctl/lockctl/lockcore"
)

// Event kinds of `lockctl watch` (docs/inspect.md, "Watch events").
const (
	// EventHeld and EventFree describe the first sample of a key.
	EventHeld = "HELD"
	EventFree = "FREE"
	// EventAcquired: the key appeared (a new owner).
	EventAcquired = "ACQUIRED"
	// EventRenewed: the same owner's key got a later expiry (PEXPIRETIME),
	// or, without it, a TTL above what was left.
	EventRenewed = "RENEWED"
	// EventReleased: the key went away well before its TTL.
	EventReleased = "RELEASED"
	// EventExpired: the key went away at its TTL.
	EventExpired = "EXPIRED"
	// EventTakeover: the owner changed with no gap seen.
	EventTakeover = "TAKEOVER"
	// EventTTLJump: the key got an earlier expiry (PEXPIRETIME), or the TTL
	// fell faster than time passed (the server's clock stepped forward).
	EventTTLJump = "TTL_JUMP"
	// EventFenceBackwards: the fencing counter (or token) decreased.
	EventFenceBackwards = history.CodeFenceBackwards
	// EventRenewedPastBound: the same owner renewed past the renewal bound.
	EventRenewedPastBound = "RENEWED_PAST_BOUND"
	// EventOverAdmitted: a semaphore or shared lock began to admit more
	// holders than it may (the OVER_ADMITTED finding, semaphore.go).
	EventOverAdmitted = "OVER_ADMITTED"
	// EventFinding and EventFindingCleared: a finding (Code, Severity)
	// appeared on, or went from, a key followed by `watch --pattern`.
	EventFinding        = "FINDING"
	EventFindingCleared = "FINDING_CLEARED"
	// EventCompanion: the key is (or became) a lock's companion (a fence
	// counter, a signal list, a wait queue): no holder, so never ACQUIRED.
	EventCompanion = "COMPANION"
	// EventCompanionGone: a companion key went away.
	EventCompanionGone = "COMPANION_GONE"
)

// Sample is one observation of a key by watch.
type Sample struct {
	// At is the local time the read was sent.
	At time.Time
	// Done is the local time the reply arrived; zero means At. The server
	// read the key at some instant between the two, so a slow reply (a
	// CLIENT PAUSE, a stalled network) widens what the Differ allows.
	Done time.Time
	Key  string
	// Exists says the key was there.
	Exists bool
	// Type is the Redis type at the key ("string" for a lock value; ""
	// when unknown).
	Type string
	// Owner is the owner token's raw bytes as a string (compared byte for byte).
	Owner string
	// PTTLMS is the remaining TTL in ms (-1 none, -2 absent).
	PTTLMS int64
	// ExpireAtMS is the key's absolute expiry from PEXPIRETIME (Unix ms,
	// the server's clock); 0 when unknown: no TTL, or a server before
	// Redis 7.0. When two samples of one owner both have it, RENEWED and
	// TTL_JUMP compare it exactly, whatever the replies' delays.
	ExpireAtMS int64
	// Fence is the fencing counter, else the holder's token, when the layout has one.
	Fence *int64
	// OverAdmitted is the OVER_ADMITTED finding's message, "" without one.
	OverAdmitted string
	// Holders counts a semaphore's or shared lock's live holders.
	Holders int
	// Role is the companion role of a key that is another lock's companion
	// (Lock.Role), "" for a lock.
	Role string
}

// SampleOf turns an inspected Lock into a Sample taken at at.
func SampleOf(l Lock, at time.Time) Sample {
	s := Sample{At: at, Key: l.Key, Exists: l.Exists, Type: l.Type, PTTLMS: l.PTTLMS, ExpireAtMS: l.serverExpireAtMS, Role: l.Role}
	if b, err := hex.DecodeString(l.OwnerHex); err == nil {
		s.Owner = string(b)
	}
	for _, f := range l.Findings {
		if f.Code == FindingOverAdmitted {
			s.OverAdmitted = f.Message
		}
	}
	for _, h := range l.Holders {
		if !h.Expired {
			s.Holders++
		}
	}
	if l.Fence != nil {
		if l.Fence.Counter != nil {
			s.Fence = l.Fence.Counter
		} else {
			s.Fence = l.Fence.Value
		}
	}
	return s
}

// Event is one line of `lockctl watch -o jsonl`.
type Event struct {
	At  string `json:"at"`
	Key string `json:"key"`
	// KeyHex is the key's bytes in hex when they are not UTF-8 (HexIfNotUTF8).
	KeyHex string `json:"key_hex,omitempty"`
	Event  string `json:"event"`
	// Owner is the owner token (printable, else hex).
	Owner         string `json:"owner,omitempty"`
	PreviousOwner string `json:"previous_owner,omitempty"`
	PTTLMS        int64  `json:"pttl_ms"`
	// PreviousPTTLMS and ElapsedMS compare with the sample before.
	PreviousPTTLMS *int64 `json:"previous_pttl_ms,omitempty"`
	ElapsedMS      int64  `json:"elapsed_ms"`
	Fence          *int64 `json:"fence,omitempty"`
	// HeldMS is how long this owner has been seen holding the key.
	HeldMS int64 `json:"held_ms,omitempty"`
	// Code and Severity name the finding of a FINDING or FINDING_CLEARED event.
	Code     string `json:"code,omitempty"`
	Severity string `json:"severity,omitempty"`
	Message  string `json:"message"`
}

// WatchOptions tune event derivation.
type WatchOptions struct {
	// RenewBound is the renewal bound (policy.renew_bound); 0 disables
	// RENEWED_PAST_BOUND.
	RenewBound time.Duration
	// Tolerance absorbs sampling jitter when comparing TTL with elapsed time
	// (0: 50ms).
	Tolerance time.Duration
}

// Differ derives events from successive samples of one key. It holds only
// the previous sample and the current owner's first sighting; Next is
// deterministic (no clock, no I/O).
type Differ struct {
	opts       WatchOptions
	prev       *Sample
	lastFence  *int64
	ownerSince time.Time
	pastBound  bool
	// over says the previous sample was OVER_ADMITTED (one event per episode).
	over bool
}

// NewDiffer returns a Differ with opts.
func NewDiffer(opts WatchOptions) *Differ {
	if opts.Tolerance <= 0 {
		opts.Tolerance = 50 * time.Millisecond
	}
	return &Differ{opts: opts}
}

// Derive runs a fresh Differ over samples of one key and returns all events.
func Derive(samples []Sample, opts WatchOptions) []Event {
	d := NewDiffer(opts)
	var out []Event
	for _, s := range samples {
		out = append(out, d.Next(s)...)
	}
	return out
}

// Next returns the events between the previous sample and cur.
func (d *Differ) Next(cur Sample) []Event {
	prev := d.prev
	out := d.next(cur)
	if cur.OverAdmitted != "" && !d.over {
		out = append(out, d.event(EventOverAdmitted, cur, prev, "%s", cur.OverAdmitted))
	}
	d.over = cur.OverAdmitted != ""
	return out
}

// next is Next without OVER_ADMITTED: the ownership events.
func (d *Differ) next(cur Sample) []Event {
	prev := d.prev
	if prev != nil && prev.Role != "" && cur.Exists && cur.Role == "" && cur.Type == prev.Type {
		cur.Role = prev.Role // a companion stays one while it exists: its evidence (a queue's lists) comes and goes
	}
	if cur.Role != "" || prev != nil && prev.Role != "" && !cur.Exists {
		d.prev = &cur
		return d.companion(cur, prev)
	}
	d.prev = &cur
	if prev == nil {
		d.lastFence = cur.Fence
		if !cur.Exists {
			return []Event{d.event(EventFree, cur, nil, "no holder")}
		}
		d.newOwner(cur)
		return []Event{d.event(EventHeld, cur, nil, "held by %s, %s", who(cur), left(cur.PTTLMS))}
	}
	var out []Event
	if d.lastFence != nil && cur.Fence != nil && *cur.Fence < *d.lastFence {
		out = append(out, d.event(EventFenceBackwards, cur, prev, "fence went from %d to %d: tokens will be reissued", *d.lastFence, *cur.Fence))
	}
	if cur.Fence != nil {
		d.lastFence = cur.Fence
	}
	// The two reads happened between least and most apart: a TTL is seen
	// to jump, or to be renewed, only if no instant of either read explains
	// it.
	elapsed := cur.At.Sub(prev.At)
	least, most := max(cur.At.Sub(prev.done()), 0), cur.done().Sub(prev.At)
	tol := d.opts.Tolerance
	prevTTL := time.Duration(prev.PTTLMS) * time.Millisecond
	expected := prevTTL - most
	exact := prev.ExpireAtMS > 0 && cur.ExpireAtMS > 0
	switch {
	case !prev.Exists && !cur.Exists:
	case !prev.Exists:
		d.newOwner(cur)
		out = append(out, d.event(EventAcquired, cur, prev, "acquired by %s, %s", who(cur), left(cur.PTTLMS)))
	case !cur.Exists:
		if prev.PTTLMS >= 0 && expected <= tol {
			out = append(out, d.event(EventExpired, cur, prev, "%s's lease ran out", who(*prev)))
		} else if prev.PTTLMS < 0 {
			out = append(out, d.event(EventReleased, cur, prev, "released by %s (it had no expiry)", who(*prev)))
		} else {
			out = append(out, d.event(EventReleased, cur, prev, "released by %s with %s left", who(*prev), ttl(max(0, expected.Milliseconds()))))
		}
	case prev.Owner != cur.Owner || prev.Type != cur.Type: // a hash replaced by a list has no owner either
		d.newOwner(cur)
		out = append(out, d.event(EventTakeover, cur, prev, "%s took over from %s with no gap seen", who(cur), who(*prev)))
	case prev.PTTLMS >= 0 && cur.PTTLMS == -1:
		out = append(out, d.event(EventRenewed, cur, prev, "expiry removed (PERSIST): the key never expires now"))
	case prev.PTTLMS == -1 && cur.PTTLMS >= 0:
		out = append(out, d.event(EventTTLJump, cur, prev, "expiry set where there was none: %s left", ttl(cur.PTTLMS)))
	case prev.PTTLMS < 0 || cur.PTTLMS < 0: // no TTL on either side
	case exact && cur.ExpireAtMS < prev.ExpireAtMS:
		// The server's absolute expiry moved: a PEXPIRE (or SET) reached
		// the key, whatever the replies' delays. Equal expiries are no
		// renewal, but the server's clock may still have stepped forward
		// (the last case: the TTL fell faster than time passed).
		out = append(out, d.event(EventTTLJump, cur, prev, "expiry moved %dms earlier (PEXPIRETIME); TTL fell %dms in %dms",
			prev.ExpireAtMS-cur.ExpireAtMS, prev.PTTLMS-cur.PTTLMS, elapsed.Milliseconds()))
	case exact && cur.ExpireAtMS > prev.ExpireAtMS, !exact && time.Duration(cur.PTTLMS)*time.Millisecond > prevTTL-least+tol:
		out = append(out, d.event(EventRenewed, cur, prev, "renewed to %s", ttl(cur.PTTLMS)))
		if b := d.opts.RenewBound; b > 0 && !d.pastBound && cur.At.Sub(d.ownerSince) > b {
			d.pastBound = true
			out = append(out, d.event(EventRenewedPastBound, cur, prev, "%s still renews after %s, past the %s renewal bound",
				who(cur), lockcore.FormatDuration(cur.At.Sub(d.ownerSince).Round(time.Millisecond)), lockcore.FormatDuration(b)))
		}
	case time.Duration(cur.PTTLMS)*time.Millisecond < expected-tol:
		out = append(out, d.event(EventTTLJump, cur, prev, "TTL fell %dms in %dms", prev.PTTLMS-cur.PTTLMS, elapsed.Milliseconds()))
	}
	return out
}

// companion derives the events of a companion key: it has no holder, so
// it appears (COMPANION) and goes (COMPANION_GONE), never ACQUIRED or
// RELEASED; its value changing (a counter's INCR) is no event.
func (d *Differ) companion(cur Sample, prev *Sample) []Event {
	role := strings.ReplaceAll(cur.Role, "_", " ")
	switch {
	case prev == nil && !cur.Exists:
		return []Event{d.event(EventFree, cur, nil, "no holder")}
	case prev == nil || !prev.Exists || prev.Role == "":
		return []Event{d.event(EventCompanion, cur, prev, "a %s of a lock, not a holder: %s", role, left(cur.PTTLMS))}
	case !cur.Exists:
		return []Event{d.event(EventCompanionGone, cur, prev, "the %s went away", strings.ReplaceAll(prev.Role, "_", " "))}
	}
	return nil
}

// done is when the reply to s arrived (At when not recorded).
func (s *Sample) done() time.Time {
	if s.Done.Before(s.At) {
		return s.At
	}
	return s.Done
}

// OwnerSince is when the current owner was first seen (zero before the
// first sample of a held key).
func (d *Differ) OwnerSince() time.Time { return d.ownerSince }

func (d *Differ) newOwner(s Sample) {
	d.ownerSince, d.pastBound = s.At, false
}

func (d *Differ) event(kind string, cur Sample, prev *Sample, format string, args ...any) Event {
	e := Event{At: rfc3339ms(cur.At), Key: cur.Key, KeyHex: HexIfNotUTF8(cur.Key), Event: kind, PTTLMS: cur.PTTLMS, Fence: cur.Fence, Message: fmt.Sprintf(format, args...)}
	if cur.Exists {
		e.Owner = show(cur.Owner)
		e.HeldMS = cur.At.Sub(d.ownerSince).Milliseconds()
	}
	if prev != nil {
		e.PreviousPTTLMS = ptr(prev.PTTLMS)
		e.ElapsedMS = cur.At.Sub(prev.At).Milliseconds()
		if prev.Exists && prev.Owner != cur.Owner {
			e.PreviousOwner = show(prev.Owner)
		}
	}
	return e
}

func show(owner string) string {
	if printable([]byte(owner)) {
		return owner
	}
	return "hex:" + fmt.Sprintf("%x", owner)
}

// who names a sample's holder in a message: its owner token, else the
// Redis type of a key with none found (a hash or list no layout explains).
func who(s Sample) string {
	switch {
	case s.Owner != "":
		return show(s.Owner)
	case s.Holders == 1:
		return "1 holder"
	case s.Holders > 1:
		return fmt.Sprintf("%d holders", s.Holders)
	case s.Type != "" && s.Type != "string":
		return "a " + s.Type + " with no owner token"
	}
	return "an empty value"
}

// left is what a PTTL leaves: "30s left", or "no expiry" (PTTL -1).
func left(ms int64) string {
	if ms < 0 {
		return "no expiry"
	}
	return ttl(ms) + " left"
}

func ttl(ms int64) string {
	if ms < 0 {
		return "no TTL"
	}
	return FormatTTL(ms)
}
