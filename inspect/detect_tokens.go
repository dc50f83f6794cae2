package inspect

import (
	"strconv"
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

// pythonRedisLock, python-redis-lock src/redis_lock/__init__.py (tags
// v3.3.0 to v4.0.1): key "lock:<name>", id b64encode(urandom(18)) (24
// characters, no "="), SET NX EX expire, no expiry by default
// (expire=None); the release script pushes to "lock-signal:<name>", which
// exists only after a release, for a second or so (signal_expire=1000 ms).
func (d *detection) pythonRedisLock(b []byte) {
	d.setOwner(b)
	if _, _, ok := d.optional(RoleSignal); ok {
		d.setLayout("python-redis-lock", Certain)
		return
	}
	d.setLayout("python-redis-lock", Likely)
}

// uuidValue is a bare UUID (8-4-4-4-12 hex):
//   - redis-semaphore (npm 5.8.0) lib/RedisMutex.js: key "mutex:<key>",
//     identifier crypto.randomUUID() (lib/Lock.js), SET PX 10000 NX,
//     refreshed every 8 s;
//   - spring-integration, spring-integration-redis/src/main/java/org/
//     springframework/integration/redis/util/RedisLockRegistry.java (tag
//     v6.3.0): key "<registryKey>:<lockKey>", value clientId =
//     UUID.randomUUID().toString(), SET PX from a Lua script;
//   - @microfleet/ioredis-lock (npm 6.0.1) src/lock.ts: the key as given,
//     value randomUUID(), SET PX 10000 NX.
//
// Without redis-semaphore's prefix nothing tells the other two apart (nor
// from a hand-rolled lock storing a UUID).
func (d *detection) uuidValue(b []byte) {
	d.setOwner(b)
	if strings.HasPrefix(d.key, "mutex:") {
		d.setLayout("redis-semaphore", Likely)
		return
	}
	d.setCandidates("spring-integration", "microfleet-ioredis-lock")
}

// alnum16 is 16 alphanumerics:
//   - laravel, src/Illuminate/Cache/RedisLock.php acquire() (Debian
//     php-illuminate-cache 8.83): SET <prefix><name> <owner> EX <seconds>
//     NX, SETNX without a TTL when seconds is 0 (the default), owner
//     Str::random() (16 alphanumerics, src/Illuminate/Cache/Lock.php);
//   - go-zero, core/stores/redis/redislock.go (v1.10.3): the key as given,
//     id stringx.Randn(16) (alphanumerics), SET NX PX seconds*1000+500 from
//     lockscript.lua: always a TTL, 500 ms by default.
func (d *detection) alnum16(b []byte) {
	d.setOwner(b)
	switch {
	case strings.Contains(strings.ToLower(d.key), "laravel"):
		d.setLayout("laravel", Likely)
	case d.v.PTTL == -1:
		d.setLayout("laravel", Guess) // go-zero always sets a TTL
	default:
		d.setCandidates("go-zero", "laravel")
	}
}

// rueidislock, github.com/redis/rueidis (v1.0.80) rueidislock/lock.go:
// keys "<prefix>:<i>:<name>" for i < 2*KeyMajority-1 (prefix
// "rueidislock", majority 2 by default), value 24 random bytes
// (internal/util RandomBytes), SET NX PXAT now+KeyValidity (5 s),
// extended every KeyValidity/2.
func (d *detection) rueidislock(b []byte) {
	d.setOwner(b)
	d.setLayout("rueidislock", Likely)
}

// nodeRedisLock, redis-lock (npm 1.0.0) index.js: key "lock.<name>", value
// Date.now()+timeout+1 (Unix ms), SET PX timeout NX (5000 ms by default);
// the release deletes the key if that time has not passed, without
// checking who holds it.
func (d *detection) nodeRedisLock(s string) {
	d.setOwner([]byte(s))
	d.setLayout("node-redis-lock", Likely)
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		d.holder().ValueExpiresAt = rfc3339ms(time.UnixMilli(ms))
	}
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
