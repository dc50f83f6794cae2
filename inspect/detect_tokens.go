package inspect

import (
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
