package inspect

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Regular expressions only for values a cheap check already singled out;
// the hot path of a scan uses the byte checks at the end of this file. They
// compile on first use: commands that never inspect do not pay for them.
var (
	reHostPID = lazyRegexp(`^(.+):([0-9]+)$`)
)

func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// maxUnknownOwner bounds the owner shown for a value no layout explains.
const maxUnknownOwner = 256

// constantOwners are values that say "locked" without saying by whom
// (shared/cases.md, cases 1 and 2).
var constantOwners = map[string]bool{
	"": true, "0": true, "1": true, "true": true, "false": true, "yes": true, "y": true, "on": true, "x": true,
	"ok": true, "lock": true, "locked": true, "busy": true, "running": true, "taken": true, "held": true,
	"acquired": true, "processing": true, "in_progress": true, "lck": true,
}

// detectString tells which library wrote a string lock. Each branch names
// the source that fixes the layout.
func (d *detection) detectString() {
	b, s, key := d.v.Bytes, string(d.v.Bytes), d.key
	if !d.v.Truncated && constantOwners[strings.ToLower(strings.TrimSpace(s))] {
		d.setOwner(b)
		d.constant = true
		d.marker = !lockNamed(key)
		d.generic(ShapeMarker, fmt.Sprintf("the constant %q: says locked, not by whom", s))
		return
	}
	switch {
	case isUUID(s):
		d.setOwner(b)
		d.generic(ShapeUUID, "a UUID, an owner token written by many libraries", seenUUID...)
	case len(s) == 24 && strings.HasSuffix(s, "==") && isBase64Token(s[:22], stdAlphabet):
		d.base64Std16(b)
	case len(s) >= 22 && isBase64Token(s[:22], urlAlphabet) && (len(s) == 22 || printable(b)):
		d.urlBase64Token(s)
	case len(s) == 32 && isHex(s):
		d.hex32(s)
	case len(b) == 16 && !printable(b) && strings.HasPrefix(key, "lock:"):
		// Beside its signal list, python-redis-lock before 3.3 (builtin_layouts.yaml).
		d.setOwner(b)
		d.generic(ShapeBinary, "16 random bytes, an owner token written by many libraries", seenRaw16...)
	case len(s) == 16 && isAlnum(s):
		d.setOwner(b)
		d.generic(ShapeRandomToken, "16 alphanumerics, a random owner token written by many libraries", seenAlnum16...)
	default:
		d.genericString()
	}
}

// Libraries known to write a generic shape, among many others (Layout.SeenIn).
var (
	seenRaw16   = []string{"python-redis-lock"}
	seenUUID    = []string{"spring-integration", "microfleet-ioredis-lock", "redis-semaphore", "freeredis", "csredis"}
	seenBase64  = []string{"redsync", "node-redis-warlock"}
	seenURL64   = []string{"redislock"}
	seenHex32   = []string{"node-redlock", "redis-py", "malkusch-lock"}
	seenAlnum16 = []string{"go-zero", "laravel"}
)

// fenceFindings checks a holder's fencing token (digits, from its value;
// "" when the value carries none, as Redisson's) against the counter that
// issues them (key; cv and ok what was read there and whether it exists):
// the counter must equal the holder's token, or a later acquire took a
// newer one (Kleppmann 2016, fencing tokens). It fills the lock's Fence and
// adds FENCE_MISMATCH or NO_FENCE; false means no acquire wrote the token.
func (d *detection) fenceFindings(digits, key string, cv Value, ok bool) bool {
	f := &Fence{CounterKey: key}
	d.lock.Fence = f
	d.fenced = true
	n, isInt := incrInt(cv.Bytes)
	isInt = ok && cv.Type == "string" && isInt
	if isInt {
		f.Counter = ptr(n)
	}
	fence, err := strconv.ParseInt(digits, 10, 64)
	switch {
	case digits != "" && err != nil:
		// 19 or 20 digits above 2^63−1: no acquire wrote it, INCR stops
		// there ("increment or decrement would overflow").
		d.lock.add(FindingFenceMismatch, SeverityError, "holder's fence %s is above %d, the highest token INCR can issue: no acquire wrote this value", digits, int64(math.MaxInt64))
		return false
	case digits != "":
		f.Value = ptr(fence)
	}
	switch {
	case !ok && f.Value != nil:
		d.lock.add(FindingNoFence, SeverityWarning, "fence counter %q does not exist although the value carries fence %d", key, fence)
	case !ok:
		d.lock.add(FindingNoFence, SeverityWarning, "fence counter %q does not exist", key)
	case !isInt:
		d.lock.add(FindingFenceMismatch, SeverityError, "fence counter %q is not an integer INCR can raise (%s %s): the next acquire fails", key, cv.Type, describe(cv.Bytes))
	case f.Value == nil:
	case n < fence:
		d.lock.add(FindingFenceMismatch, SeverityError, "holder's fence %d is above the counter %d at %q: the counter went back, tokens will be reissued", fence, n, key)
	case n > fence && d.v.Changed:
		// The counter was read after a new acquire took the key; the
		// holder shown is the one before it.
	case n > fence:
		d.lock.add(FindingFenceMismatch, SeverityError, "holder's fence %d is below the counter %d at %q: a later acquire issued a newer token", fence, n, key)
	case n == math.MaxInt64:
		d.lock.add(FindingFenceMismatch, SeverityError, "fence counter %q is at %d, the highest token INCR can issue: the next acquire fails", key, n)
	}
	return true
}

// incrInt parses b as INCR does (Redis's string2ll): an optional '-' and
// decimal digits without a leading zero, within int64; no sign '+', no
// spaces. A counter strconv would take (" 5", "+5", "05") makes the
// acquire script's INCR fail, so it is not an integer here either.
func incrInt(b []byte) (int64, bool) {
	s := string(b)
	digits := strings.TrimPrefix(s, "-")
	if !isDigits(digits) || len(digits) > 1 && digits[0] == '0' || s == "-0" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// base64Std16 is 16 bytes in standard base64 (24 characters, "=="):
// redsync, github.com/go-redsync/redsync/v4 (v4.18.1) mutex.go genValue():
// base64.StdEncoding of 16 random bytes, SET NX PX, under the key its
// caller chose: nothing in the key or value is its own (issue 27: a shared
// shape names no one). node-redis-warlock's UUIDv1 is an entry.
func (d *detection) base64Std16(b []byte) {
	d.setOwner(b)
	d.generic(ShapeBase64Token, "24 base64 characters (16 random bytes), an owner token written by many libraries", seenBase64...)
}

// urlBase64Token is 16 bytes in raw URL base64 (22 characters), then
// optional text: bsm/redislock (v0.9.4) redislock.go writes its token so,
// followed by the caller's metadata, under the caller's key; so may
// others: a generic base64 token, the text after it shown as metadata.
func (d *detection) urlBase64Token(s string) {
	d.setOwner([]byte(s[:22]))
	desc := "22 URL-safe base64 characters (16 random bytes), an owner token written by many libraries"
	if len(s) > 22 {
		d.holder().Metadata = s[22:]
		desc += ", then metadata"
	}
	d.generic(ShapeBase64Token, desc, seenURL64...)
}

// hex32 is 16 bytes in hex: node-redlock, redlock.js _random() (4.2.0)
// and src/index.ts _random() (5.0.0-beta.2): randomBytes(16).toString("hex"),
// SET NX PX; malkusch/lock 2.2.1 RedisMutex.php: bin2hex(random_bytes(16)),
// SET NX EX under "lock_<name>"; and many others: 16 random bytes in hex name no library
// (issue 27). redis-py's uuid1().hex is an entry.
func (d *detection) hex32(s string) {
	d.setOwner([]byte(s))
	d.generic(ShapeHexToken, "32 hex characters (16 random bytes), an owner token written by many libraries", seenHex32...)
}

// uuid1Time decodes the 60-bit timestamp of a version-1 UUID's 16 bytes
// (100 ns intervals since 1582-10-15, RFC 9562 section 5.1).
func uuid1Time(raw []byte) (time.Time, bool) {
	low := uint64(raw[0])<<24 | uint64(raw[1])<<16 | uint64(raw[2])<<8 | uint64(raw[3])
	mid := uint64(raw[4])<<8 | uint64(raw[5])
	hi := uint64(raw[6]&0x0f)<<8 | uint64(raw[7])
	ticks := hi<<48 | mid<<32 | low
	const gregorianToUnix = 122192928000000000
	if ticks < gregorianToUnix {
		return time.Time{}, false
	}
	u := ticks - gregorianToUnix
	return time.Unix(int64(u/1e7), int64(u%1e7)*100), true
}

const (
	stdAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	urlAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
)

// isBase64Token reports whether s (22 characters) is 16 bytes in base64:
// all in alphabet, the last one with its low 4 bits zero (A, Q, g or w).
func isBase64Token(s, alphabet string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(alphabet, s[i]) < 0 {
			return false
		}
	}
	return strings.IndexByte("AQgw", s[len(s)-1]) >= 0
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return s != ""
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func isAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return s != ""
}

// isUUID reports the 8-4-4-4-12 hex form (either case).
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
				return false
			}
		}
	}
	return true
}

// isRedissonField reports "<uuid>:<threadId>" with an optional ":write".
func isRedissonField(f string) bool {
	id, thread, ok := strings.Cut(strings.TrimSuffix(f, ":write"), ":")
	return ok && isUUID(id) && isDigits(thread)
}
