package inspect

import (
	"encoding/base64"
	"encoding/hex"
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
	reShedlock   = lazyRegexp(`^ADDED:([^@]+)@(.*)$`)
	reUUIDSuffix = lazyRegexp(`^(.*):([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$`)
	reHostPID    = lazyRegexp(`^(.+):([0-9]+)$`)
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
		return
	}
	switch {
	case isFencedValue(s):
		d.fencedValue(s)
	case strings.HasPrefix(s, "ADDED:") && reShedlock().MatchString(s):
		d.shedlock(s)
	case strings.HasPrefix(key, "CSRedisClientLock:") && isUUID(s):
		// csredis, src/CSRedisCore/CSRedisClient.cs Lock(): key
		// "CSRedisClientLock:<name>", value Guid.NewGuid(), SET NX EX.
		d.setLayout("csredis", Certain)
		d.setOwner(b)
	case strings.HasPrefix(key, "RedisClientLock:") && isUUID(s):
		// FreeRedis, src/FreeRedis/RedisClient/Modules/Lock.cs Lock(): key
		// "RedisClientLock:<name>", value Guid.NewGuid(), SET NX EX.
		d.setLayout("freeredis", Certain)
		d.setOwner(b)
	case strings.HasPrefix(key, "lock:owner:"):
		d.redisLockGemOwner(b)
	case strings.HasPrefix(key, "lock:expire:"):
		d.redisLockGemExpire(s)
	case strings.HasPrefix(key, "rueidislock:") && len(b) == 24:
		d.rueidislock(b)
	case strings.HasPrefix(key, "lock.") && len(s) == 13 && isDigits(s):
		d.nodeRedisLock(s)
	case isDistLockValue(s):
		d.distributedLock(s)
	case isUUID(s):
		d.uuidValue(b)
	case len(s) == 24 && strings.HasSuffix(s, "==") && isBase64Token(s[:22], stdAlphabet):
		d.base64Std16(b)
	case len(s) == 24 && strings.HasPrefix(key, "lock:") && isBase64(s, stdAlphabet):
		d.pythonRedisLock(b)
	case len(s) >= 22 && isBase64Token(s[:22], urlAlphabet) && (len(s) == 22 || printable(b)):
		d.redislock(s)
	case len(s) == 32 && isHex(s):
		d.hex32(s)
	case len(s) == 24 && isHex(s) && strings.HasPrefix(key, "uniquejobs:"):
		// sidekiq-unique-jobs, lib/sidekiq_unique_jobs/lua/lock.lua: the
		// digest key "uniquejobs:<md5>" holds the job id (SecureRandom.hex(12)).
		d.setLayout("sidekiq-unique-jobs", Likely)
		d.setOwner(b)
		d.holder().JobID = s
	case len(b) == 16 && !printable(b) && strings.HasPrefix(key, "lock:"):
		// python-redis-lock before 3.3 stored urandom(16) raw (tag v3.2.0,
		// src/redis_lock/__init__.py: self._id = urandom(16)).
		d.setLayout("python-redis-lock", Guess)
		d.setOwner(b)
		d.optional(RoleSignal)
	case len(s) == 16 && isAlnum(s):
		d.alnum16(b)
	default:
		d.setOwner(b[:min(len(b), maxUnknownOwner)])
		d.appData = printable(b)
	}
}

// fencedValue is "<fence>:<owner>" with an INCR counter elsewhere:
//   - lockctl, lockcore/scripts/acquire.lua: owner 32 lowercase hex, SET PX,
//     the counter at the fence key (lockcore.FenceKeyFor, or the configured
//     fence template) on the same slot;
//   - microi, the seed platform: owner a ULID or a 32-hex GUID, the counter
//     at the sibling key "<name>:FencingToken" of "<name>:Lease"
//     (e.g. Microi:{os}:DatabaseBackup:Lease and :FencingToken).
//
// The configured fence key is tried first, then the sibling: the first
// that exists is the counter; with neither, the configured one is missing.
func (d *detection) fencedValue(s string) {
	digits, owner, _ := strings.Cut(s, ":")
	d.setOwner([]byte(owner))
	key, cv, ok := d.fenceCounter()
	name := "lockctl"
	if strings.HasSuffix(key, microiCounterSuffix) || !isHex(owner) {
		name = "microi"
		if t, isULID := ulidTime(owner); isULID && d.plausible(t) {
			d.holder().AcquiredAt = rfc3339ms(t)
		}
	}
	f := &Fence{CounterKey: key}
	d.lock.Fence = f
	d.fenced = true
	n, isInt := incrInt(cv.Bytes)
	isInt = ok && cv.Type == "string" && isInt
	if isInt {
		f.Counter = ptr(n)
	}
	fence, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		// 19 or 20 digits above 2^63−1: no acquire wrote it, INCR stops
		// there ("increment or decrement would overflow").
		d.setLayout(name, Likely)
		d.lock.add(FindingFenceMismatch, SeverityError, "holder's fence %s is above %d, the highest token INCR can issue: no acquire wrote this value", digits, int64(math.MaxInt64))
		return
	}
	f.Value = ptr(fence)
	if !ok {
		d.setLayout(name, Likely)
		d.lock.add(FindingNoFence, SeverityWarning, "fence counter %q does not exist although the value carries fence %d", key, fence)
		return
	}
	d.setLayout(name, Certain)
	if !isInt {
		d.lock.add(FindingFenceMismatch, SeverityError, "fence counter %q is not an integer INCR can raise (%s %s): the next acquire fails", key, cv.Type, describe(cv.Bytes))
		return
	}
	switch {
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
}

// fenceCounter picks the fence counter among the fence_counter companions
// (the configured key, then the seed platform's sibling): the first that
// exists, else the first. It marks only the one picked as the layout's.
func (d *detection) fenceCounter() (string, Value, bool) {
	first := ""
	for _, c := range d.cks {
		if c.Role != RoleFence {
			continue
		}
		if first == "" {
			first = c.Key
		}
		if v, ok := d.comp[c.Key]; ok && v.Exists() {
			d.used[c.Key] = true
			return c.Key, v, true
		}
	}
	d.used[first] = true
	return first, Value{}, false
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

// shedlock, providers/redis/shedlock-provider-redis-spring/src/main/java/
// net/javacrumbs/shedlock/provider/redis/spring/RedisLockProvider.java:
// key "job-lock:<env>:<name>", value String.format("ADDED:%s@%s",
// toIsoString(now), getHostname()) (newer versions may append ":<uuid>"),
// SET NX PX lockAtMostFor.
func (d *detection) shedlock(s string) {
	m := reShedlock().FindStringSubmatch(s)
	d.setLayout("shedlock", Certain)
	d.setOwner([]byte(s))
	h := d.holder()
	host := m[2]
	if u := reUUIDSuffix().FindStringSubmatch(host); u != nil {
		host, h.ClientID = u[1], u[2]
	}
	h.Host = host
	if t, err := time.Parse(time.RFC3339Nano, m[1]); err == nil {
		h.AcquiredAt = rfc3339ms(t)
	}
}

// redis-lock-gem (mlanett/redis-lock), lib/redis-lock.rb: MSETNX of
// "lock:owner:<key>" = "<hostname>:<pid>" and "lock:expire:<key>" = Unix
// seconds; no Redis TTL, a contender deletes a stale pair.
func (d *detection) redisLockGemOwner(b []byte) {
	d.setOwner(b)
	d.valueTTL = true
	if m := reHostPID().FindStringSubmatch(string(b)); m != nil {
		d.holder().Host = m[1]
		d.holder().PID, _ = parseInt(m[2])
	}
	_, cv, ok := d.companion(RoleExpire)
	if !ok {
		d.setLayout("redis-lock-gem", Likely)
		return
	}
	d.setLayout("redis-lock-gem", Certain)
	if sec, isInt := parseInt(string(cv.Bytes)); isInt {
		d.holder().ValueExpiresAt = rfc3339ms(time.Unix(sec, 0))
	}
}

// redisLockGemExpire is the "lock:expire:<key>" half of redis-lock-gem.
func (d *detection) redisLockGemExpire(s string) {
	sec, isInt := parseInt(s)
	if !isInt {
		d.setOwner([]byte(s))
		d.appData = true
		return
	}
	d.valueTTL = true
	d.holder().ValueExpiresAt = rfc3339ms(time.Unix(sec, 0))
	_, cv, ok := d.companion(RoleOwner)
	if !ok {
		d.setLayout("redis-lock-gem", Likely)
		return
	}
	d.setLayout("redis-lock-gem", Certain)
	d.setOwner(cv.Bytes)
	if m := reHostPID().FindStringSubmatch(string(cv.Bytes)); m != nil {
		d.holder().Host = m[1]
		d.holder().PID, _ = parseInt(m[2])
	}
}

// distributedlock (.NET, madelson/DistributedLock),
// src/DistributedLock.Redis/Primitives/RedisMutexPrimitive.cs: SET key
// lockId NX PX, lockId "<MachineName>_<ProcessId>_<Guid "n">".
func (d *detection) distributedLock(s string) {
	rest := s[:len(s)-33]
	i := strings.LastIndexByte(rest, '_')
	d.setLayout("distributedlock", Certain)
	d.setOwner([]byte(s))
	d.holder().Host = rest[:i]
	d.holder().PID, _ = parseInt(rest[i+1:])
}

// base64Std16 is 16 bytes in standard base64 (24 characters, "=="):
//   - redsync, github.com/go-redsync/redsync/v4 (v4.18.1) mutex.go
//     genValue(): base64.StdEncoding of 16 random bytes, SET NX PX; under
//     any key, "lock:<name>" too (no python-redis-lock release wrote
//     16 bytes in base64: see pythonRedisLock);
//   - node-redis-warlock (npm 1.0.2) lib/warlock.js lock(): key
//     "<key>:lock", value the 16 bytes of a UUIDv1 in base64, SET PX NX.
//
// Random bytes look like a UUIDv1 (version nibble 1, variant 10) once in 64:
// only a UUIDv1 whose time is within a day of the read is warlock's.
func (d *detection) base64Std16(b []byte) {
	d.setOwner(b)
	raw, err := base64.StdEncoding.DecodeString(string(b))
	if err == nil && len(raw) == 16 && raw[6]>>4 == 1 && raw[8]>>6 == 2 {
		if t, ok := uuid1Time(hex.EncodeToString(raw)); ok && d.plausible(t) {
			d.setLayout("node-redis-warlock", Likely)
			d.holder().AcquiredAt = rfc3339ms(t)
			return
		}
		if strings.HasSuffix(d.key, ":lock") {
			d.setCandidates("node-redis-warlock", "redsync")
			return
		}
	}
	d.setLayout("redsync", Likely)
}

// redislock (bsm), github.com/bsm/redislock redislock.go: token
// base64.RawURLEncoding of 16 random bytes (22 characters) followed by the
// optional metadata, SET NX PX from the obtain script.
func (d *detection) redislock(s string) {
	d.setOwner([]byte(s[:22]))
	if len(s) == 22 {
		d.setLayout("redislock", Likely)
		return
	}
	d.setLayout("redislock", Guess)
	d.holder().Metadata = s[22:]
}

// hex32 is 16 bytes in hex:
//   - redis-py, redis/lock.py Lock.acquire() (tag v4.3.4, Debian
//     python3-redis): token uuid.uuid1().hex, SET NX PX; a version-1 UUID
//     (nibble 12 is "1", variant 10xx) whose timestamp is the acquisition
//     time;
//   - node-redlock, redlock.js _random() (4.2.0) and src/index.ts
//     _random() (5.0.0-beta.2): randomBytes(16).toString("hex"), SET NX PX.
//
// One random value in 64 has redis-py's shape, with a timestamp anywhere in
// 1582-5236: only a time within a day of the read says redis-py.
func (d *detection) hex32(s string) {
	d.setOwner([]byte(s))
	if s[12] != '1' || !strings.ContainsRune("89ab", rune(s[16])) {
		d.setLayout("node-redlock", Likely)
		return
	}
	if t, ok := uuid1Time(s); ok && d.plausible(t) {
		d.setLayout("redis-py", Likely)
		d.holder().AcquiredAt = rfc3339ms(t)
		return
	}
	d.setCandidates("node-redlock", "redis-py")
}

// uuid1Time decodes the 60-bit timestamp of a version-1 UUID in hex (100 ns
// intervals since 1582-10-15, RFC 9562 section 5.1).
func uuid1Time(h string) (time.Time, bool) {
	raw, err := hex.DecodeString(h)
	if err != nil || len(raw) != 16 {
		return time.Time{}, false
	}
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

// detectHash tells which library wrote a hash lock:
//   - redisson, redisson/src/main/java/org/redisson/RedissonLock.java
//     tryLockInnerAsync: HINCRBY <name> "<client UUID>:<threadId>" 1 and
//     PEXPIRE (30 s watchdog, renewed every 10 s); the value is the hold count;
//   - redisson-fenced, RedissonFencedLock.java: the same hash plus an INCR
//     token counter "redisson_lock_token:{<name>}";
//   - redisson-fair, RedissonFairLock.java: plus the wait queue list
//     "redisson_lock_queue:{<name>}" and the timeout zset
//     "redisson_lock_timeout:{<name>}";
//   - redisson-rw, RedissonReadLock.java / RedissonWriteLock.java: field
//     "mode" = read|write, holders "<uuid>:<threadId>" (":write" for the writer);
//   - sidekiq-unique-jobs, lib/sidekiq_unique_jobs/lua/lock.lua: HSET
//     "<digest>:LOCKED" <jid> <current_time>, PEXPIRE when the job has a TTL.
func (d *detection) detectHash() {
	fields := d.v.Fields
	if strings.HasSuffix(d.key, ":LOCKED") && len(fields) > 0 {
		d.sidekiq()
		return
	}
	var mode string
	var holders [][2]string
	for _, f := range fields {
		switch {
		case f[0] == "mode":
			mode = f[1]
		case isRedissonField(f[0]):
			if _, ok := parseInt(f[1]); !ok {
				d.wrongHash()
				return
			}
			holders = append(holders, f)
		default:
			d.wrongHash()
			return
		}
	}
	if len(holders) == 0 {
		d.wrongHash()
		return
	}
	d.setOwner([]byte(holders[0][0]))
	h := d.holder()
	h.ClientID, h.Thread, _ = strings.Cut(strings.TrimSuffix(holders[0][0], ":write"), ":")
	n, _ := parseInt(holders[0][1])
	d.lock.HoldCount = ptr(n)
	switch {
	case mode != "":
		d.setLayout("redisson-rw", Certain)
		h.Mode = mode
		d.redissonRWHolders(mode, holders)
	default:
		d.setLayout("redisson", Certain)
		if _, _, ok := d.peek(RoleFence); ok {
			d.redissonFenced()
		} else if _, _, ok := d.peek(RoleQueue); ok {
			d.redissonFair()
		} else if _, _, ok := d.peek(RoleTimeout); ok {
			d.redissonFair()
		}
	}
}

func (d *detection) redissonFenced() {
	d.setLayout("redisson-fenced", Certain)
	key, cv, _ := d.companion(RoleFence)
	f := &Fence{CounterKey: key}
	if n, ok := parseInt(string(cv.Bytes)); ok {
		f.Counter = ptr(n)
	}
	d.lock.Fence = f
	d.fenced = true
}

func (d *detection) redissonFair() {
	d.setLayout("redisson-fair", Certain)
	_, q, _ := d.companion(RoleQueue)
	d.companion(RoleTimeout)
	d.lock.Waiters = append([]string{}, q.Items...)
}

func (d *detection) sidekiq() {
	d.setLayout("sidekiq-unique-jobs", Certain)
	jid, at := d.v.Fields[0][0], d.v.Fields[0][1]
	d.setOwner([]byte(jid))
	d.holder().JobID = jid
	if f, err := strconv.ParseFloat(at, 64); err == nil && f > 0 && !math.IsInf(f, 0) && f < 1e11 {
		sec, frac := math.Modf(f)
		d.holder().AcquiredAt = rfc3339ms(time.Unix(int64(sec), int64(frac*1e9)))
	}
	d.companion(RoleDigest)
}

func (d *detection) wrongHash() {
	d.lock.add(FindingWrongType, SeverityError, "a hash whose fields no lock library writes")
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

// isFencedValue reports "<fence digits>:<owner>", the owner 32 hex digits
// (lockctl, or a GUID "N" of the seed platform, either case) or a ULID.
func isFencedValue(s string) bool {
	f, o, ok := strings.Cut(s, ":")
	if !ok || len(f) > 20 || !isDigits(f) {
		return false
	}
	_, isULID := ulidTime(o)
	return len(o) == 32 && isHex(strings.ToLower(o)) || isULID
}

// isDistLockValue reports "<host>_<pid>_<32 lowercase hex>".
func isDistLockValue(s string) bool {
	if len(s) < 36 || s[len(s)-33] != '_' || !isHex(s[len(s)-32:]) {
		return false
	}
	rest := s[:len(s)-33]
	i := strings.LastIndexByte(rest, '_')
	return i > 0 && isDigits(rest[i+1:])
}

// isRedissonField reports "<uuid>:<threadId>" with an optional ":write".
func isRedissonField(f string) bool {
	id, thread, ok := strings.Cut(strings.TrimSuffix(f, ":write"), ":")
	return ok && isUUID(id) && isDigits(thread)
}
