package inspect

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lockctl/lockctl/lockcore"
)

// Value is what was read at one key.
type Value struct {
	// Type is the TYPE reply: string, hash, list, set, zset, stream or none.
	Type string
	// PTTL is the PTTL reply in ms: -1 no expiry, -2 no key.
	PTTL int64
	// ExpireAtMS is PEXPIRETIME (Unix ms) when the server has it, else the
	// reader's clock + PTTL; 0 without a TTL.
	ExpireAtMS int64
	// ServerExpiry says ExpireAtMS is the server's PEXPIRETIME reply, exact
	// to the ms, not an estimate from the reader's clock.
	ServerExpiry bool
	// Idle is OBJECT IDLETIME in seconds, nil when not allowed or not read
	// (scans): the least time since the key was last written or read.
	Idle *int64
	// ReadAtMS is the reader's clock (Unix ms) when the key was read, 0
	// when unknown: the "now" a time found in a value is checked against.
	ReadAtMS int64
	// Bytes is the string value, or its first MaxValueBytes bytes.
	Bytes []byte
	// Fields are hash fields and values in the order read; Items are list,
	// set or zset members (zset: member, score, member, score...).
	Fields [][2]string
	Items  []string
	// Size is STRLEN, HLEN, LLEN, SCARD or ZCARD.
	Size int64
	// Truncated says Bytes, Fields or Items hold only part of the value.
	Truncated bool
	// Changed says a lockctl value read again after its fence counter was
	// no longer Bytes: a new holder acquired the key between the reads,
	// so the counter was read after it issued a newer fence.
	Changed bool
	// Top is a zset's highest-scored member and its score, read apart
	// from Items' bound (ZRANGE -1 -1 WITHSCORES); nil elsewhere.
	Top []string
	// RenewedPastSecond says a re-read (Reader.RecheckSubsecond) saw the
	// same value renewed to 1s or more after it was read with under 1s left.
	RenewedPastSecond bool
	// HoldPTTL is, for a shared hash lock, the PTTL (ms; -2 gone) of each
	// read holder's lease key, by hash field (Declared.ReadLease).
	HoldPTTL map[string]int64
}

// Exists reports whether the key was there.
func (v Value) Exists() bool { return v.Type != "" && v.Type != "none" && v.PTTL != -2 }

// Options tune analysis; the zero value is usable.
type Options struct {
	// LeaseCap is the renewable cap; a PTTL above it is LEASE_OVER_CAP
	// (0: lockcore.DefaultLeaseCap).
	LeaseCap time.Duration
	// FenceKey returns the lockctl fence counter key of a lock key
	// (nil: lockcore.FenceKeyFor, the default template's rule).
	FenceKey func(lockKey string) string
	// Cluster makes CROSS_SLOT an error instead of a warning.
	Cluster bool
	// ExpectOwner, when set, is compared byte for byte with the owner token
	// and with the whole value of a string key ("<fence>:<owner>" of lockctl).
	ExpectOwner []byte
	// IsFenceKey reports whether a key met on its own is a fence counter by
	// the configured fence template (nil: only the built-in names, "…:fence"
	// and the seed platform's "…:FencingToken").
	IsFenceKey func(key string) bool
	// Permits is the most holders a semaphore or shared lock may admit
	// (--permits); more live ones is OVER_ADMITTED. 0: not checked.
	Permits int64
	// Declared are the user's layouts (ParseLayouts, then Compile), tried
	// before the built-in ones (builtin_layouts.yaml), on keys of any type.
	Declared []Declared
}

func (o Options) leaseCap() time.Duration {
	if o.LeaseCap > 0 {
		return o.LeaseCap
	}
	return lockcore.DefaultLeaseCap
}

func (o Options) fenceKey(k string) string {
	if o.FenceKey != nil {
		return o.FenceKey(k)
	}
	return lockcore.FenceKeyFor(k)
}

// Companion roles.
const (
	RoleFence   = "fence_counter"
	RoleSignal  = "signal"
	RoleQueue   = "wait_queue"
	RoleTimeout = "wait_timeouts"
	RoleOwner   = "owner"
	RoleExpire  = "expire"
	RoleDigest  = "digest"
	// RoleJob is a job queue's job (or task) hash beside its lock (builtin_layouts.yaml: bull, asynq).
	RoleJob = "job"
	// RoleJobQueue is one of the keys of a job queue whose jobs run under
	// locks (its lists, counters, event stream): builtin_layouts.yaml, bull.
	RoleJobQueue = "job_queue"
	// RoleProbe is a key a library writes to test the server, beside no
	// lock in particular (builtin_layouts.yaml: Symfony's TIME check).
	RoleProbe = "probe"
	// RolePermits is a semaphore's counter of available permits (semaphore.go).
	RolePermits = "permits_counter"
	// RolePermitTimeouts is the zset an integer key would have as Redisson's
	// permit counter: a probe read by TYPE alone, never shown as a companion.
	RolePermitTimeouts = "permit_timeouts"
	// RoleReadLease is a read holder's lease key of a shared lock
	// (Declared.ReadLease): Redisson's ":rwlock_timeout:<n>" keys.
	RoleReadLease = "read_lease"
)

type companionKey struct {
	Role string
	Key  string
	// Get says its value is read (a declared companion's value expression).
	Get bool
}

// companions returns the keys to read next to key, given what was read
// there: each library's companion keys (fence counters, signal lists, wait
// queues), with their roles; fenced says a layout v may be carries a fence
// token in its value. The reader reads them in the round trip that reads
// hash values.
func companions(key string, v Value, opts Options) (cks []companionKey, fenced bool) {
	ms := candidates(key, v, opts, true)
	cks = companionKeys(key, v, ms)
	fenced = slices.ContainsFunc(ms, func(m declaredMatch) bool { return m.layout.fenceGroup })
	// A string a layout takes without a required companion is that layout's;
	// one only told apart by one (a queue's "id") may still be a counter.
	if v.Type != "string" || v.Truncated || slices.ContainsFunc(ms, func(m declaredMatch) bool { return !m.layout.needsCompanion() }) {
		return cks, fenced
	}
	if _, isInt := incrInt(v.Bytes); !isInt || companionOf(key, v, opts) {
		return cks, fenced // a counter named as one needs no probe: its name says what it is
	}
	if _, _, isTime := parseTime(string(v.Bytes)); !isTime {
		for _, n := range neighbours(key) {
			cks = append(cks, companionKey{Role: roleNeighbour, Key: n})
		}
	}
	return cks, fenced
}

// companionOf recognises a counter at the configured fence template, a
// companion no built-in layout's key template names (those are entries
// with a role in builtin_layouts.yaml, Redisson's permit counter too).
func companionOf(key string, v Value, opts Options) bool {
	_, isInt := parseInt(string(v.Bytes))
	return v.Type == "string" && isInt && opts.IsFenceKey != nil && opts.IsFenceKey(key)
}

// noFindings is shared by locks without findings: JSON shows [] not null,
// and add never appends to it (it allocates on first use).
var noFindings = []Finding{}

// Analyze inspects one key from what was read there (v) and at its
// companion keys (by key; missing ones count as absent). It is pure: the
// same input always gives the same Lock.
func Analyze(key string, v Value, comp map[string]Value, opts Options) Lock {
	l := Lock{Key: key, KeyHex: HexIfNotUTF8(key), Type: v.Type, Exists: v.Exists(), PTTLMS: v.PTTL, IdleSeconds: v.Idle,
		ValueBytes: v.Size, Truncated: v.Truncated, Layout: Layout{Name: "unknown", Confidence: Guess}, Findings: noFindings}
	if l.Type == "" {
		l.Type = "none"
	}
	if !l.Exists {
		l.Type, l.PTTLMS = "none", -2
		l.add(FindingAbsent, SeverityInfo, "no such key")
		l.checkOwner(nil, opts) // nobody holds it: NOT_OWNED, so exit 0 still means "held by that owner"
		return l
	}
	if v.ExpireAtMS > 0 && v.PTTL >= 0 {
		s := rfc3339ms(time.UnixMilli(v.ExpireAtMS))
		l.ExpiresAt = &s
		if v.ServerExpiry {
			l.serverExpireAtMS = v.ExpireAtMS
		}
	}
	cks, _ := companions(key, v, opts)
	for _, c := range cks {
		if c.Role == RolePermitTimeouts || c.Role == roleNeighbour {
			continue // a probe read by TYPE alone: it has no PTTL to show
		}
		cv := comp[c.Key]
		t := cv.Type
		if t == "" {
			t = "none"
		}
		pttl := cv.PTTL
		if !cv.Exists() {
			pttl = -2
		}
		l.Companions = append(l.Companions, Companion{Role: c.Role, Key: c.Key, KeyHex: HexIfNotUTF8(c.Key), Type: t, Exists: cv.Exists(), PTTLMS: pttl, Slot: lockcore.Slot(c.Key)})
	}
	if m, ok := matchDeclared(key, v, comp, opts); ok {
		if m.layout.Role != "" {
			l.Layout, l.Role, l.Companions = Layout{Name: m.layout.Name, Confidence: m.layout.Confidence}, m.layout.Role, nil
			l.checkOwner(nil, opts)
			return l
		}
		d := &detection{key: key, v: v, comp: comp, lock: &l, used: map[string]bool{}}
		d.detectDeclared(m)
		l.finish(d, opts)
		return l
	}
	if companionOf(key, v, opts) {
		l.Layout, l.Role = Layout{Name: "lockctl", Confidence: Certain}, RoleFence
		l.checkOwner(nil, opts)
		return l
	}
	if isCounter(key, v) {
		if beside := neighbourLock(cks, comp); beside != "" || !lockNamed(key) {
			l.Companions = nil
			l.genericCounter(v, beside)
			l.checkOwner(nil, opts)
			return l
		}
	}
	d := &detection{key: key, v: v, comp: comp, lock: &l, used: map[string]bool{}}
	switch v.Type {
	case "string":
		d.detectString()
	case "hash":
		d.genericHash() // the hash layouts are entries of builtin_layouts.yaml
	case "zset":
		d.genericZset(zmembers(d.v.Items)) // the zset layouts are entries of builtin_layouts.yaml
	default:
		d.genericContainer()
	}
	l.finish(d, opts)
	return l
}

// finish keeps the companions the layout has and adds the findings.
func (l *Lock) finish(d *detection, opts Options) {
	kept := l.Companions[:0]
	for _, c := range l.Companions {
		if d.used[c.Key] {
			kept = append(kept, c)
		}
	}
	l.Companions = kept
	if len(l.Companions) == 0 {
		l.Companions = nil
	}
	l.findings(d, opts)
	l.checkOwner(d.owner, opts)
	if l.OwnerCheck == "NOT_OWNED" && d.v.Type == "string" && !d.v.Truncated && string(d.v.Bytes) == string(opts.ExpectOwner) {
		l.OwnerCheck = "OWNED" // the whole value, as unlock --owner takes it
	}
	l.checkShared(opts)
}

// isCounter reports an integer string INCR could raise that is no time: a
// counter unless a lock word in its name says it is a lock's value
// (shared/cases.md, case 1: "horizon:lock:x" = "1").
func isCounter(key string, v Value) bool {
	if v.Type != "string" || v.Truncated {
		return false
	}
	_, isInt := incrInt(v.Bytes)
	_, _, isTime := parseTime(string(v.Bytes))
	return isInt && !isTime
}

// checkOwner sets OwnerCheck when an expected owner was given: OWNED only
// when owner (nil for an absent key or a companion) matches it byte for byte.
// Analyze also takes the whole string value (unlock --owner's rule).
func (l *Lock) checkOwner(owner []byte, opts Options) {
	if opts.ExpectOwner == nil {
		return
	}
	l.OwnerCheck = "NOT_OWNED"
	if owner != nil && string(owner) == string(opts.ExpectOwner) {
		l.OwnerCheck = "OWNED"
	}
}

// detection carries one Analyze call's intermediate results.
type detection struct {
	key   string
	v     Value
	comp  map[string]Value
	lock  *Lock
	owner []byte
	// fenced says the layout issues fencing tokens.
	fenced   bool
	constant bool
	appData  bool
	// used are the companion keys the detected layout has.
	used map[string]bool
	// valueTTL says the layout keeps its expiry in a value (no Redis TTL by design).
	valueTTL bool
	// memberTTL says each holder's expiry is in its zset score and expired
	// members are reclaimed by the next acquire: no Redis TTL by design.
	memberTTL bool
	// container says a hash, zset, list, set or stream no layout explains:
	// not known to hold an owner token, so its TTL is no fault of a lock.
	container bool
	// marker says a constant or a time under a key with no lock's name: a
	// flag or a time as much as a lock, so no TTL is a warning.
	marker bool
}

func (d *detection) setLayout(name string, c Confidence) {
	d.lock.Layout = Layout{Name: name, Confidence: c}
}

// plausibleWindowMS bounds how far from the read a time found in a token
// may be to count as its acquisition time: random bytes read as a UUIDv1
// or a ULID give a time anywhere in centuries.
const plausibleWindowMS = 24 * 3600 * 1000

// plausible reports whether t is within a day of the read (Value.ReadAtMS;
// false when the read time is unknown).
func (d *detection) plausible(t time.Time) bool {
	if d.v.ReadAtMS == 0 {
		return false
	}
	diff := t.UnixMilli() - d.v.ReadAtMS
	return diff >= -plausibleWindowMS && diff <= plausibleWindowMS
}

func (d *detection) setOwner(b []byte) {
	d.owner = b
	d.lock.OwnerHex = hex.EncodeToString(b)
	if printable(b) {
		d.lock.Owner = string(b)
	}
}

func (d *detection) holder() *Holder {
	if d.lock.Holder == nil {
		d.lock.Holder = &Holder{}
	}
	return d.lock.Holder
}

func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func parseInt(s string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n, err == nil
}

func ptr[T any](v T) *T { return &v }

// Finding codes (docs/findings.md).
const (
	FindingNoTTL          = "NO_TTL"
	FindingConstantOwner  = "CONSTANT_OWNER"
	FindingNotALock       = "NOT_A_LOCK"
	FindingLeaseOverCap   = "LEASE_OVER_CAP"
	FindingSubsecondLease = "SUBSECOND_LEASE"
	FindingNoFence        = "NO_FENCE"
	FindingFenceMismatch  = "FENCE_MISMATCH"
	FindingCrossSlot      = "CROSS_SLOT"
	FindingBinaryValue    = "BINARY_VALUE"
	FindingWrongType      = "WRONG_TYPE"
	FindingAbsent         = "ABSENT"
	FindingTTLUnitMixup   = "TTL_UNIT_MIXUP"
	FindingOverAdmitted   = "OVER_ADMITTED"
	FindingStaleHolders   = "STALE_HOLDERS"
)

// reasons are the one-line "why it matters" of each finding code.
var reasons = map[string]string{
	FindingNoTTL:          "a crashed holder blocks the key forever: nothing ever expires it",
	FindingConstantOwner:  "holders cannot be told apart, so owner-checked renew and release are impossible: safe only for a library that never releases another's lock by key",
	FindingNotALock:       "if this is a lock key, application data overwrote it: the holder's owner-checked release no longer matches; the lock needs its own key",
	FindingLeaseOverCap:   "a crashed holder blocks others for the whole TTL; renew a short lease instead (or renewal adds instead of sets)",
	FindingSubsecondLease: "a lease under 1s is likely a ms/s mix-up: the lock lapses while the work runs",
	FindingNoFence:        "without a fencing token a paused holder that lost its lease can still write (Kleppmann 2016)",
	FindingFenceMismatch:  "the counter must equal the holder's token; otherwise tokens are reissued or a stale holder overwrote the lock",
	FindingCrossSlot:      "in Redis Cluster a script touching both keys fails with CROSSSLOT; put the common part in a {hash tag}",
	FindingBinaryValue:    "the owner token is not text: compare raw bytes (shown as hex), not a decoded string",
	FindingWrongType:      "no lock layout lockctl knows keeps a lock in this shape: if this key is a lock, another feature may share its name; if not, it is no lock",
	FindingAbsent:         "nobody holds the lock (or the key template does not match the one the application uses)",
	FindingTTLUnitMixup:   "a crashed holder blocks the key for as good as ever; a TTL of a year or more is a unit mix-up (a Go time.Duration, in ns, passed as seconds)",
	FindingOverAdmitted:   "more holders run at once than the semaphore or lock allows: the work it guards is no longer limited",
	FindingStaleHolders:   "a holder's lease ran out without a release (a crash, or a lost refresh); its permit is reclaimed only by the next acquire",
}

func (l *Lock) add(code string, sev Severity, format string, args ...any) {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	if len(l.Findings) == 0 {
		l.Findings = make([]Finding, 0, 2)
	}
	l.Findings = append(l.Findings, Finding{Code: code, Severity: sev, Message: msg, Reason: reasons[code]})
}

// findings adds the findings that do not depend on the layout's own rules.
func (l *Lock) findings(d *detection, opts Options) {
	switch {
	case l.PTTLMS == -1 && d.memberTTL:
	case l.PTTLMS == -1 && d.container:
		l.add(FindingNoTTL, SeverityInfo, "no TTL on a %s no lock layout explains: if it is a lock, nothing expires it", l.Type)
	case d.container: // a TTL on data or a queue is no lease
	case l.PTTLMS == -1 && d.marker:
		l.add(FindingNoTTL, SeverityWarning, "no TTL (PTTL -1) on a constant or a time under a key with no lock's name: if it is a lock, nothing expires it")
	case l.PTTLMS == -1 && d.valueTTL:
		l.add(FindingNoTTL, SeverityWarning, "no Redis TTL: the expiry is only in a value, cleaned up by the next contender")
		l.Findings[len(l.Findings)-1].Reason = "if no contender comes, the key stays forever; a client that ignores the value never sees the lock expire"
	case l.PTTLMS == -1:
		l.add(FindingNoTTL, SeverityError, "no TTL (PTTL -1)")
	case l.PTTLMS >= 0 && l.PTTLMS < 1000 && d.v.Idle != nil && *d.v.Idle == 0 && !d.v.RenewedPastSecond:
		// Idle 0: written (or read) in the last second, so the TTL was
		// under about 1s then too; a key idle for longer was set with at
		// least PTTL + idle, a healthy lease near its end (or unknown, when
		// the idle time was not read).
		l.add(FindingSubsecondLease, SeverityWarning, "%dms left on a key written or read under 1s ago (idle 0s): a lease set under 1s", l.PTTLMS)
	case l.PTTLMS >= yearMS:
		l.add(FindingTTLUnitMixup, SeverityError, "%s left (expires %s): the key effectively never expires; read as ns given as s the lease was %s, as µs given as s %s",
			FormatTTL(l.PTTLMS), expiresAt(l), lockcore.FormatDuration(time.Duration(l.PTTLMS/1000).Round(time.Millisecond)), lockcore.FormatDuration(time.Duration(l.PTTLMS).Round(time.Second)))
	case l.PTTLMS > opts.leaseCap().Milliseconds():
		l.add(FindingLeaseOverCap, SeverityWarning, "%s left, over the %s renewable cap",
			FormatTTL(l.PTTLMS), lockcore.FormatDuration(opts.leaseCap()))
	}
	if d.constant {
		l.add(FindingConstantOwner, SeverityWarning, "the value is the constant %q, not a per-holder token", string(d.v.Bytes))
	}
	if d.appData && l.PTTLMS == -1 {
		l.add(FindingNotALock, SeverityWarning, "the value %s is no token shape (not random, not a host, time or marker) and has no TTL: likely application data", describe(d.v.Bytes))
	}
	if d.owner != nil && !printable(d.owner) {
		l.add(FindingBinaryValue, SeverityInfo, "the owner token is %d bytes of binary (hex %s)", len(d.owner), short(l.OwnerHex))
	}
	switch {
	case l.Layout.Name == "unknown" || d.fenced:
	default:
		l.add(FindingNoFence, SeverityWarning, "%s issues no fencing token", l.Layout.Name)
	}
	sev := SeverityWarning
	if opts.Cluster {
		sev = SeverityError
	}
	slot := lockcore.Slot(l.Key)
	for _, c := range l.Companions {
		if c.Exists && c.Slot != slot && l.Layout.Name != "unknown" {
			l.add(FindingCrossSlot, sev, "the lock (slot %d) and its %s %q (slot %d) are on different cluster slots", slot, strings.ReplaceAll(c.Role, "_", " "), c.Key, c.Slot)
		}
	}
}

func describe(b []byte) string {
	s := string(b)
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return strconv.Quote(s)
}

func short(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// expiresAt is the lock's absolute expiry for a message, "unknown" without one.
func expiresAt(l *Lock) string {
	if l.ExpiresAt == nil {
		return "unknown"
	}
	return *l.ExpiresAt
}
