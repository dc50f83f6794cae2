// Package inspect reads Redis lock keys without writing a byte and says who
// holds them, which library wrote them and what is wrong with them.
//
// The pure part takes what was read (Value: type, PTTL, value bytes, hash
// fields, companion keys) and returns a Lock with its layout and findings
// (Analyze); the reading part (Reader, Scan) fetches Values in pipelined
// round trips; the watch part turns a sequence of Samples into Events
// (Differ). Nothing here prints, reads flags or exits.
package inspect

import (
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lockctl/lockctl/lockcore"
)

// Confidence says how sure a layout detection is.
type Confidence string

const (
	// Certain: the value's format and a companion key or key prefix only this library writes.
	Certain Confidence = "certain"
	// Likely: the value's format matches the library's token generator.
	Likely Confidence = "likely"
	// Guess: the value is compatible with the library, and with others.
	Guess Confidence = "guess"
)

// Severity ranks findings: error > warning > info.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Rank orders severities for --fail-on: info 1, warning 2, error 3, else 0.
func (s Severity) Rank() int {
	switch s {
	case SeverityError:
		return 3
	case SeverityWarning:
		return 2
	case SeverityInfo:
		return 1
	}
	return 0
}

// Layout names the library that wrote a lock, with the detection's confidence.
type Layout struct {
	Name       string     `json:"name"`
	Confidence Confidence `json:"confidence"`
	// Candidates lists several libraries, most likely first, when the
	// value alone cannot tell them apart (Name the first, Confidence
	// guess). No layout sets it since issue 27: a shape several libraries
	// write names none (SeenIn); the field stays in the JSON shape.
	Candidates []string `json:"candidates,omitempty"`
	// Shape, set when no layout matched (Name "unknown"), says what the
	// value is: a generic shape (docs/layouts.md, "Keys no layout
	// explains"), e.g. "uuid", "hex-token", "counter", "time-scored-zset".
	Shape string `json:"shape,omitempty"`
	// Description says in one line what the key is: its shape, its TTL and
	// its companions, without naming a library that nothing specific to it matched.
	Description string `json:"description,omitempty"`
	// SeenIn lists libraries known to write this generic shape, among many
	// others: no evidence that one of them wrote this key.
	SeenIn []string `json:"seen_in,omitempty"`
}

// Label names the layout for people: "redis-py", or "node-redlock or
// redis-py" when the value's shape leaves several candidates.
func (l Layout) Label() string {
	if len(l.Candidates) > 1 {
		return strings.Join(l.Candidates, " or ")
	}
	return l.Name
}

// Finding is one problem (or fact) about a lock: a stable code, a severity,
// one line saying what was seen and one saying why it matters.
type Finding struct {
	Code     string   `json:"code"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	Reason   string   `json:"reason"`
}

// Holder is what a layout carries about the holder beyond the owner token.
// Every field is optional; times are RFC 3339 (UTC, ms precision).
type Holder struct {
	Host       string `json:"host,omitempty"`
	PID        int64  `json:"pid,omitempty"`
	ClientID   string `json:"client_id,omitempty"`
	Thread     string `json:"thread,omitempty"`
	JobID      string `json:"job_id,omitempty"`
	Mode       string `json:"mode,omitempty"`
	Metadata   string `json:"metadata,omitempty"`
	AcquiredAt string `json:"acquired_at,omitempty"`
	// ValueExpiresAt is an expiry the library keeps in a value instead of a
	// Redis TTL (redis-lock-gem).
	ValueExpiresAt string `json:"value_expires_at,omitempty"`
}

// Fence is the fencing token of a lock: the holder's token (Value, when the
// layout stores it with the lock) and the counter that issues them.
type Fence struct {
	Value      *int64 `json:"value"`
	Counter    *int64 `json:"counter"`
	CounterKey string `json:"counter_key"`
}

// Companion is a key a layout keeps next to the lock (fence counter, signal
// list, wait queue), with what was found there.
type Companion struct {
	Role string `json:"role"`
	Key  string `json:"key"`
	// KeyHex is the key's bytes in hex when they are not UTF-8 (HexIfNotUTF8).
	KeyHex string `json:"key_hex,omitempty"`
	Type   string `json:"type"`
	Exists bool   `json:"exists"`
	PTTLMS int64  `json:"pttl_ms"`
	Slot   int    `json:"slot"`
}

// Lock is the inspection of one key: the stable JSON shape of
// `lockctl inspect -o json` (docs/inspect.md).
type Lock struct {
	Key string `json:"key"`
	// KeyHex is the key's bytes in hex when they are not UTF-8 (HexIfNotUTF8).
	KeyHex string `json:"key_hex,omitempty"`
	Type   string `json:"type"`
	Exists bool   `json:"exists"`
	// PTTLMS is the remaining TTL in ms; -1 no expiry, -2 no key.
	PTTLMS int64 `json:"pttl_ms"`
	// ExpiresAt is the absolute expiry (RFC 3339, UTC), null without a TTL.
	ExpiresAt *string `json:"expires_at"`
	// IdleSeconds is OBJECT IDLETIME when the server allows it.
	IdleSeconds *int64 `json:"idle_s,omitempty"`
	Layout      Layout `json:"layout"`
	// Role is set when the key is a companion of another lock (fence_counter,
	// signal, wait_queue, wait_timeouts, permits_counter, read_lease): no lock findings
	// apply to it.
	Role string `json:"role,omitempty"`
	// Owner is the owner token when printable UTF-8, else "".
	Owner string `json:"owner"`
	// OwnerHex is the owner token's raw bytes in hex (compare bytes, not text).
	OwnerHex string `json:"owner_hex"`
	// OwnerCheck is OWNED or NOT_OWNED when an expected owner was given.
	OwnerCheck string  `json:"owner_check,omitempty"`
	Holder     *Holder `json:"holder"`
	// HoldCount is the reentrant hold count (Redisson), null elsewhere.
	HoldCount *int64 `json:"hold_count"`
	Fence     *Fence `json:"fence"`
	// Waiters are the queued owners of a layout with a wait queue.
	Waiters []string `json:"waiters,omitempty"`
	// Holders, PermitsInUse and Permits describe a semaphore or shared
	// lock (semaphore.go, docs/layouts.md): every holder read, oldest
	// first; the live permits taken (null when a bounded read cannot
	// tell); the semaphore's size when the layout stores it.
	Holders      []SharedHolder `json:"holders,omitempty"`
	PermitsInUse *int64         `json:"permits_in_use,omitempty"`
	Permits      *int64         `json:"permits,omitempty"`
	Companions   []Companion    `json:"companions,omitempty"`
	// ValueBytes is the size of the value (STRLEN, HLEN, LLEN, ...).
	ValueBytes int64 `json:"value_size"`
	// Truncated says only part of a large value was read.
	Truncated bool      `json:"truncated,omitempty"`
	Findings  []Finding `json:"findings"`
	// serverExpireAtMS is ExpiresAt as the server's PEXPIRETIME gave it
	// (Unix ms), 0 when it was estimated or there is no TTL; for watch
	// (SampleOf).
	serverExpireAtMS int64
	// permitsMin is the fewest live permits a semaphore's bounded read
	// proves taken, for --permits when PermitsInUse is unknown.
	permitsMin int64
}

// HexIfNotUTF8 returns s's bytes in lowercase hex when s is not valid UTF-8,
// else "". JSON and YAML can only show such bytes as U+FFFD, which names no
// key or value; the hex names it exactly. Shown as key_hex beside each key
// read from Redis or given on the command line, and as unlock's value_hex
// (omitted for UTF-8).
func HexIfNotUTF8(s string) string {
	if utf8.ValidString(s) {
		return ""
	}
	return hex.EncodeToString([]byte(s))
}

// Worst returns the highest severity among the lock's findings, or "".
func (l *Lock) Worst() Severity {
	var w Severity
	for _, f := range l.Findings {
		if f.Severity.Rank() > w.Rank() {
			w = f.Severity
		}
	}
	return w
}

// Summary counts locks by layout and by finding code.
type Summary struct {
	Locks int `json:"locks"`
	// Companions counts keys that are another lock's companion (fence counters, queues).
	Companions int            `json:"companions"`
	ByLayout   map[string]int `json:"by_layout"`
	ByFinding  map[string]int `json:"by_finding"`
	// BySeverity counts locks by their worst finding.
	BySeverity  map[string]int `json:"by_severity"`
	Interrupted bool           `json:"interrupted,omitempty"`
}

// NewSummary returns an empty Summary whose maps encode as {} (not null).
func NewSummary() Summary {
	return Summary{ByLayout: map[string]int{}, ByFinding: map[string]int{}, BySeverity: map[string]int{}}
}

// Add counts one lock; a companion key (Role set) counts in Companions only.
// s must come from NewSummary.
func (s *Summary) Add(l *Lock) {
	if l.Role != "" {
		s.Companions++
		return
	}
	s.Locks++
	s.ByLayout[l.Layout.Label()]++
	for _, f := range l.Findings {
		s.ByFinding[f.Code]++
	}
	if w := l.Worst(); w != "" {
		s.BySeverity[string(w)]++
	}
}

// Report is the result of one inspect call.
type Report struct {
	Locks   []Lock  `json:"locks"`
	Summary Summary `json:"summary"`
}

// NewReport builds a Report and its Summary from locks.
func NewReport(locks []Lock) Report {
	r := Report{Locks: locks}
	if r.Locks == nil {
		r.Locks = []Lock{}
	}
	r.Summary = NewSummary()
	for i := range r.Locks {
		r.Summary.Add(&r.Locks[i])
	}
	return r
}

func rfc3339ms(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// Year is 365 days in ms: TTLs from a year up are shown in years and days.
const yearMS = 365 * 24 * 3600 * 1000

// FormatTTL shows a TTL in ms for people: "30s", "1h2m", and from a year up
// "634y 52d", past the ~292 years a time.Duration can hold (a PTTL is an
// int64 of ms, up to ~292 million years).
func FormatTTL(ms int64) string {
	if ms >= yearMS {
		const dayMS = 24 * 3600 * 1000
		return fmt.Sprintf("%dy %dd", ms/yearMS, ms%yearMS/dayMS)
	}
	return lockcore.FormatDuration(time.Duration(ms) * time.Millisecond)
}
