package inspect

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Generic shapes (issue 27, docs/layouts.md "Keys no layout explains"):
// what a key is when no layout's key template, value format or companion
// keys matched. Such a key is layout "unknown" with its shape described;
// it never gets a library's name, and nothing about it is an error unless
// it is true whatever library wrote it (docs/findings.md, "Severity").
const (
	ShapeUUID        = "uuid"
	ShapeUUIDCounter = "uuid-counter"
	ShapeHexToken    = "hex-token"
	ShapeBase64Token = "base64-token"
	ShapeRandomToken = "random-token"
	ShapeComposite   = "composite-token"
	ShapeHostPID     = "host-pid"
	ShapeTimestamp   = "timestamp"
	ShapeMarker      = "marker"
	ShapeCounter     = "counter"
	ShapeText        = "text"
	ShapeBinary      = "binary"
	ShapeTimeZset    = "time-scored-zset"
	ShapeZset        = "zset"
	ShapeHash        = "hash"
	ShapeContainer   = "container"
)

// RoleCounter is an integer counter met beside a lock key (same prefix or
// hash tag): its likely fence or index counter, not a lock of its own.
const RoleCounter = "counter"

// roleNeighbour is a key probed by TYPE alone next to an integer key: one
// that exists makes the integer a counter beside a lock (neighbours).
const roleNeighbour = "neighbour"

// Epoch bounds of a time in a value or score: 2001-09-09 to 2100 in s or ms.
const (
	minEpochS = 1e9
	maxEpochS = 4102444800
)

// generic sets the layout to "unknown" with a shape and a description of
// the value; the TTL is appended. seenIn are libraries known to write the
// shape, among others: named as such, never as the writer.
func (d *detection) generic(shape, desc string, seenIn ...string) {
	d.lock.Layout = Layout{Name: "unknown", Confidence: Guess, Shape: shape, Description: desc + "; " + ttlPhrase(d.v.PTTL), SeenIn: seenIn}
}

func ttlPhrase(pttl int64) string {
	if pttl == -1 {
		return "no TTL"
	}
	return "TTL " + FormatTTL(max(pttl, 0))
}

// genericString describes a string value no layout explains: a marker, a
// time, a host:pid, a random token or one of several parts; text that is
// none of these is application data when it has no TTL (NOT_A_LOCK).
func (d *detection) genericString() {
	b, s := d.v.Bytes, string(d.v.Bytes)
	d.setOwner(b[:min(len(b), maxUnknownOwner)])
	switch {
	case !printable(b):
		d.generic(ShapeBinary, fmt.Sprintf("%d bytes of binary, a random token or serialized data", d.v.Size))
	case isMarker(s):
		d.constant = true
		d.marker = !lockNamed(d.key)
		d.generic(ShapeMarker, fmt.Sprintf("the constant marker %q: says locked, not by whom", s))
	case d.timestamp(s):
	case isDigits(strings.TrimPrefix(s, "-")):
		d.generic(ShapeCounter, fmt.Sprintf("an integer (%s) under a lock's name: a hold count, or a counter", s))
	case isUUIDCounter(s):
		d.generic(ShapeUUIDCounter, "a UUID and a counter (<uuid>:<n>), an owner token written by many libraries")
	case isHostPID(s):
		m := reHostPID().FindStringSubmatch(s)
		d.holder().Host = m[1]
		d.holder().PID, _ = parseInt(m[2])
		d.generic(ShapeHostPID, "a host:pid owner token")
	case len(s) >= 16 && isHex(strings.ToLower(s)):
		d.generic(ShapeHexToken, fmt.Sprintf("%d hex characters, a random owner token written by many libraries", len(s)))
	case len(s) >= 16 && isBase64(strings.TrimRight(s, "="), stdAlphabet+"-_") && mixed(s):
		d.generic(ShapeBase64Token, fmt.Sprintf("%d base64 characters, a random owner token written by many libraries", len(s)))
	case isComposite(s):
		d.generic(ShapeComposite, fmt.Sprintf("an owner token of %d parts (%s)", len(splitToken(s)), partsOf(s)))
	case len(s) >= 8 && isAlnum(s) && mixed(s):
		d.generic(ShapeRandomToken, fmt.Sprintf("%d alphanumerics, a random owner token written by many libraries", len(s)))
	default:
		d.appData = true
		d.generic(ShapeText, "text that is no token shape (not random, not a host, time or marker)")
	}
}

// isMarker reports a value of one or two punctuation characters ("*", "-"):
// a library that releases by key, not by owner, writes one.
func isMarker(s string) bool {
	if s == "" || len(s) > 2 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c > '~' || isAlnum(string(c)) {
			return false
		}
	}
	return true
}

// timestamp describes a value that is a time: Unix s, ms or µs (digits,
// s may have a fraction) or RFC 3339, within 2001-2100. The holder's
// acquire time or its deadline: which one, the value does not say.
func (d *detection) timestamp(s string) bool {
	t, unit, ok := parseTime(s)
	if !ok {
		return false
	}
	d.generic(ShapeTimestamp, fmt.Sprintf("a time, %s (%s): the holder's acquire time or its deadline", rfc3339ms(t), unit))
	d.marker = !lockNamed(d.key)
	return true
}

// parseTime reads a time in a value: Unix s (10 digits, or a fraction),
// ms (13) or µs (16), or RFC 3339, between 2001 and 2100.
func parseTime(s string) (time.Time, string, bool) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil && t.Year() > 2000 && t.Year() < 2100 {
		return t, "RFC 3339", true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !isDigits(strings.Replace(s, ".", "", 1)) {
		return time.Time{}, "", false
	}
	switch {
	case f >= minEpochS && f < maxEpochS:
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9)), "Unix s", true
	case !strings.Contains(s, ".") && f >= minEpochMS && f < maxEpochMS:
		return time.UnixMilli(int64(f)), "Unix ms", true
	case !strings.Contains(s, ".") && f >= minEpochMS*1000 && f < maxEpochMS*1000:
		return time.UnixMicro(int64(f)), "Unix µs", true
	}
	return time.Time{}, "", false
}

// isHostPID reports "<host>:<pid>": a host name (letters, digits, . - _)
// and a process id.
func isHostPID(s string) bool {
	m := reHostPID().FindStringSubmatch(s)
	if m == nil || len(m[2]) > 7 {
		return false
	}
	for _, c := range m[1] {
		if !(c == '.' || c == '-' || c == '_' || c < 128 && isAlnum(string(c))) {
			return false
		}
	}
	return !isDigits(m[1])
}

// isUUIDCounter reports "<uuid>:<n>".
func isUUIDCounter(s string) bool {
	u, n, ok := strings.Cut(s, ":")
	return ok && isUUID(u) && isDigits(n)
}

// mixed reports letters and digits together, or both cases: a word has neither.
func mixed(s string) bool {
	var lower, upper, digit bool
	for i := 0; i < len(s); i++ {
		c := s[i]
		lower = lower || c >= 'a' && c <= 'z'
		upper = upper || c >= 'A' && c <= 'Z'
		digit = digit || c >= '0' && c <= '9'
	}
	return digit && (lower || upper) || lower && upper && len(s) >= 16
}

// splitToken cuts a value at the separators tokens are built with.
func splitToken(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(":|@/_", r) })
}

// isComposite reports a value of 2 to 6 parts at least one of which is a
// token, a UUID, a time or a process id ("host_1234_<guid>", "w-1:<uuid>").
func isComposite(s string) bool {
	parts := splitToken(s)
	if len(parts) < 2 || len(parts) > 6 || strings.ContainsAny(s, " \t\n{}[]\"") {
		return false
	}
	for _, p := range parts {
		if partShape(p) != "name" {
			return true
		}
	}
	return false
}

// partShape names one part of a composite token.
func partShape(p string) string {
	switch {
	case isUUID(p):
		return "uuid"
	case isDigits(p):
		if _, _, ok := parseTime(p); ok {
			return "time"
		}
		return "number"
	case len(p) >= 16 && isHex(strings.ToLower(p)):
		return "hex"
	case len(p) >= 12 && isBase64(strings.TrimRight(p, "="), stdAlphabet+"-_") && mixed(p):
		return "token"
	}
	return "name"
}

func partsOf(s string) string {
	var out []string
	for _, p := range splitToken(s) {
		out = append(out, partShape(p))
	}
	return strings.Join(out, ", ")
}

// lockWords are key parts that say a key is a lock: an integer there with
// no TTL is a lock value (shared/cases.md, case 1), elsewhere a counter.
var lockWords = []string{"lock", "mutex", "lease", "semaphore", "latch", "leader"}

// lockNamed reports a key with a part that begins or ends with a lock
// word ("lock", "mylock", "lockname"; not "released").
func lockNamed(key string) bool {
	parts := strings.FieldsFunc(strings.ToLower(key), func(r rune) bool { return !isAlnum(string(r)) })
	for _, p := range parts {
		for _, w := range lockWords {
			if strings.HasPrefix(p, w) || strings.HasSuffix(p, w) || strings.HasSuffix(p, w+"s") {
				return true
			}
		}
	}
	return false
}

// neighbours are the keys a lock beside the counter at key may have: the
// key without its last part ("a:b:fence" → "a:b"), that part replaced by a
// lock word ("{t}:seq" → "{t}:lock"), and for a hash tag {t} the tag
// itself, "{t}" and "lock:{t}" (a counter and its lock share a slot).
func neighbours(key string) []string {
	var out []string
	add := func(k string) {
		if k != "" && k != key && !strings.HasPrefix(k, ":") {
			for _, o := range out {
				if o == k {
					return
				}
			}
			out = append(out, k)
		}
	}
	if i := strings.LastIndexAny(key, ":._-"); i > 0 {
		add(key[:i])
		add(key[:i+1] + "lock")
	}
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			tag := key[i+1 : i+1+j]
			add(tag)
			add("{" + tag + "}")
			add("lock:{" + tag + "}")
			add("{" + tag + "}:lock")
		}
	}
	return out
}

// neighbourLock returns an existing neighbour of an integer key read as a
// roleNeighbour probe, or "".
func neighbourLock(cks []companionKey, comp map[string]Value) string {
	for _, c := range cks {
		if c.Role != roleNeighbour {
			continue
		}
		if t := comp[c.Key].Type; t != "" && t != "none" {
			return c.Key
		}
	}
	return ""
}

// genericCounter describes an integer no layout explains: beside a lock
// it is that lock's likely fence or index counter (a companion), alone a
// counter; neither holds an owner token, so no TTL is no fault.
func (l *Lock) genericCounter(v Value, beside string) {
	n, _ := incrInt(v.Bytes)
	l.Layout = Layout{Name: "unknown", Confidence: Guess, Shape: ShapeCounter}
	if beside != "" {
		l.Role = RoleCounter
		l.Layout.Description = fmt.Sprintf("an integer counter (%d) beside the key %q: its likely fence or index counter; %s", n, beside, ttlPhrase(v.PTTL))
		return
	}
	l.Layout.Description = fmt.Sprintf("an integer counter (%d), no lock beside it; %s", n, ttlPhrase(v.PTTL))
}

// genericHash describes a hash no layout explains: its fields' shapes.
func (d *detection) genericHash() {
	d.container = true
	var tokens int
	for _, f := range d.v.Fields {
		if partShape(f[0]) != "name" || isRedissonField(f[0]) || isUUIDCounter(f[0]) {
			tokens++
		}
	}
	desc := fmt.Sprintf("a hash of %d fields", d.v.Size)
	if tokens > 0 {
		desc += fmt.Sprintf(", %d of them named by tokens (holders?)", tokens)
	}
	d.generic(ShapeHash, desc)
}

// genericZset describes a zset no layout explains: scored by times, it is
// a holder or lease set (each member's score its acquire time or deadline,
// so the key needs no TTL); otherwise just a zset.
func (d *detection) genericZset(ms []zmember, ok bool) {
	d.container = true
	unit := 0.0
	for _, m := range ms {
		u := 0.0
		switch {
		case m.score >= minEpochMS && m.score < maxEpochMS:
			u = 1
		case m.score >= minEpochS && m.score < maxEpochS:
			u = 1000
		}
		if u == 0 || unit != 0 && u != unit {
			ok = false
			break
		}
		unit = u
	}
	if !ok || len(ms) == 0 {
		d.generic(ShapeZset, fmt.Sprintf("a zset of %d members whose scores are not times", d.v.Size))
		d.lock.add(FindingWrongType, SeverityInfo, "a zset whose scores are not times: no lock layout lockctl knows")
		return
	}
	d.memberTTL = true
	now := d.nowMS()
	future := 0
	for _, m := range ms {
		at := int64(m.score * unit)
		if now > 0 && at > now {
			future++
			d.addHolder(m.name, "", 0, at)
		} else {
			d.addHolder(m.name, "", at, 0)
		}
	}
	what := "a holder or lease set"
	switch {
	case now > 0 && future == len(ms):
		what = "a lease set: every score is a deadline ahead"
	case now > 0 && future == 0:
		what = "a holder set: every score is a time past (acquire times, or deadlines run out)"
	}
	units := map[float64]string{1: "Unix ms", 1000: "Unix s"}[unit]
	d.generic(ShapeTimeZset, fmt.Sprintf("a zset of %d members scored by times (%s): %s", d.v.Size, units, what))
	d.inUse(false, false)
}

// genericContainer describes a list, set or stream: no lock layout
// lockctl knows keeps a lock in one (a queue, a signal, data).
func (d *detection) genericContainer() {
	d.container = true
	d.generic(ShapeContainer, fmt.Sprintf("a %s of %d items", d.v.Type, d.v.Size))
	d.lock.add(FindingWrongType, SeverityInfo, "a %s: no lock layout lockctl knows keeps a lock in a %s", d.v.Type, d.v.Type)
}
