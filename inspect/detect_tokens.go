package inspect

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"
)

// Random-token layouts whose values share a shape with another library's:
// each detector names its sources and says when it must name candidates
// instead of one library.

// microiCounterSuffix and microiLeaseSuffix name the seed platform's
// sibling keys: the lock "<name>:Lease" and its INCR counter
// "<name>:FencingToken".
const (
	microiLeaseSuffix   = ":Lease"
	microiCounterSuffix = ":FencingToken"
)

// microiSibling returns the seed platform's fence counter of a lock key
// ("…:Lease" → "…:FencingToken"), or "" for any other key.
func microiSibling(key string) string {
	if !strings.HasSuffix(key, microiLeaseSuffix) {
		return ""
	}
	return strings.TrimSuffix(key, microiLeaseSuffix) + microiCounterSuffix
}

// crockford is the ULID alphabet (Crockford's base32: no I, L, O, U).
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// ulidTime reports whether s is a ULID (26 Crockford base32 characters,
// the first at most 7: 128 bits) and returns its 48-bit ms timestamp
// (github.com/ulid/spec, "Components").
func ulidTime(s string) (time.Time, bool) {
	if len(s) != 26 || s[0] > '7' {
		return time.Time{}, false
	}
	var ms int64
	for i := 0; i < len(s); i++ {
		v := strings.IndexByte(crockford, s[i])
		if v < 0 {
			return time.Time{}, false
		}
		if i < 10 {
			ms = ms<<5 | int64(v)
		}
	}
	return time.UnixMilli(ms), true
}

// isBase64 reports whether every byte of s is in alphabet (no padding).
func isBase64(s, alphabet string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(alphabet, s[i]) < 0 {
			return false
		}
	}
	return s != ""
}

// uuid1Token reads the time of a version-1 UUID written as 32 hex digits
// (redis-py's uuid1().hex) or as its 16 bytes in standard base64, 24
// characters (node-redis-warlock): version nibble 1, variant 10 (RFC 9562
// section 4.1). Random bytes have that shape once in 64.
func uuid1Token(s string) (time.Time, bool) {
	raw, err := hex.DecodeString(s)
	if len(s) != 32 || err != nil {
		raw, err = base64.StdEncoding.DecodeString(s)
	}
	if err != nil || len(raw) != 16 || raw[6]>>4 != 1 || raw[8]>>6 != 2 {
		return time.Time{}, false
	}
	return uuid1Time(raw)
}
