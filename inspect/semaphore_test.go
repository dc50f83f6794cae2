package inspect_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Each layout below is written with the commands its library's scripts send,
// the values taken from the source named in the test (also in
// inspect/semaphore.go and docs/layouts.md):
//   - swarthy/redis-semaphore, npm 5.8.0 (as published),
//     lib/semaphore/acquire/lua.js, lib/multiSemaphore/acquire/lua.js,
//     lib/Lock.js, lib/misc.js;
//   - symfony/lock tags v5.4.40 and v7.1.1, Store/RedisStore.php (Debian
//     12's php-symfony-lock 5.4.53 has the same scripts);
//   - redisson/redisson tag redisson-4.7.0,
//     RedissonPermitExpirableSemaphore.java, RedissonReadLock.java,
//     RedissonWriteLock.java.

// semaphoreAcquire replays redis-semaphore's acquire script for members
// taken scoreAgo ago, as that call left the key: ZADD <Date.now()> member...
// then PEXPIRE <lockTimeout> (default 10000 ms), run scoreAgo before now.
// Calls go oldest first; a later call's PEXPIRE replaces an earlier one's.
func semaphoreAcquire(t *testing.T, c *redis.Client, key string, scoreAgo time.Duration, members ...string) {
	t.Helper()
	at := time.Now().Add(-scoreAgo).UnixMilli()
	for _, m := range members {
		must(t, c.ZAdd(ctx, key, redis.Z{Score: float64(at), Member: m}).Err())
	}
	if at+10000 > time.Now().UnixMilli() {
		must(t, c.PExpireAt(ctx, key, time.UnixMilli(at+10000)).Err())
	}
}

// multiMembers is a MultiSemaphore's members for permits: "<identifier>_<i>".
func multiMembers(id string, permits int) []string {
	out := make([]string, permits)
	for i := range out {
		out[i] = id + "_" + strconv.Itoa(i)
	}
	return out
}

// symfonyToken is Symfony's RedisStore::getUniqueToken: base64_encode(random_bytes(32)).
func symfonyToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// symfonySave replays Symfony's save() (write) or saveRead() (read): ZADD
// <now+ttl ms> token (and "__write__" for a write lock, which saveRead
// removes), then PEXPIREAT the key at its highest score. expiresIn is the
// holder's remaining lease (negative: expired, not yet removed).
func symfonySave(t *testing.T, c *redis.Client, key, token string, write bool, expiresIn time.Duration) {
	t.Helper()
	score := float64(time.Now().Add(expiresIn).UnixMilli())
	must(t, c.ZAdd(ctx, key, redis.Z{Score: score, Member: token}).Err())
	if write {
		must(t, c.ZAdd(ctx, key, redis.Z{Score: score, Member: "__write__"}).Err())
	} else {
		must(t, c.ZRem(ctx, key, "__write__").Err())
	}
	top := c.ZRevRangeWithScores(ctx, key, 0, 0).Val()[0].Score
	must(t, c.PExpireAt(ctx, key, time.UnixMilli(int64(top))).Err())
}

func holderOwners(l inspect.Lock) []string {
	var out []string
	for _, h := range l.Holders {
		o := h.Owner
		if o == "" {
			o = "hex:" + h.OwnerHex
		}
		out = append(out, o)
	}
	return out
}

func inUse(l inspect.Lock) int64 {
	if l.PermitsInUse == nil {
		return -1
	}
	return *l.PermitsInUse
}

func TestRedisSemaphore(t *testing.T) {
	c := client(t)
	key := "semaphore:" + strings.ReplaceAll(redistest.Name(t), "/", "_")
	crashed, a, b := guid(), guid(), guid()
	// crashed took a permit 12 s ago and never refreshed; a and b hold.
	semaphoreAcquire(t, c, key, 12*time.Second, crashed)
	semaphoreAcquire(t, c, key, 4*time.Second, a)
	semaphoreAcquire(t, c, key, 2*time.Second, b)
	l := readOne(t, c, key, inspect.Options{})
	// UUIDs scored in ms are also what a hand-rolled ZADD semaphore stores.
	if l.Layout.Name != "redis-semaphore" || l.Layout.Confidence != inspect.Likely {
		t.Fatalf("layout %+v findings %v", l.Layout, l.Findings)
	}
	if hasFinding(l, inspect.FindingWrongType) || !hasFinding(l, inspect.FindingStaleHolders) || hasFinding(l, inspect.FindingOverAdmitted) || hasFinding(l, inspect.FindingSubsecondLease) {
		t.Errorf("findings %v", l.Findings)
	}
	if got := strings.Join(holderOwners(l), ","); got != crashed+","+a+","+b {
		t.Errorf("holders %s, want oldest first", got)
	}
	if inUse(l) != 2 || l.Permits != nil {
		t.Errorf("permits in use %d, permits %v", inUse(l), l.Permits)
	}
	h := l.Holders[0]
	if !h.Expired || h.TTLMS == nil || *h.TTLMS > -1500 || *h.TTLMS < -2500 || *h.AgeMS < 11500 {
		t.Errorf("crashed holder %+v: want expired ~2s ago (lockTimeout 10s, taken from the key's TTL)", h)
	}
	h = l.Holders[2]
	if h.Expired || *h.TTLMS < 7500 || *h.TTLMS > 8500 || *h.AgeMS < 1500 || *h.AgeMS > 2500 || h.Permits != 1 {
		t.Errorf("live holder %+v", h)
	}
	if l := readOne(t, c, key, inspect.Options{Permits: 1}); !hasFinding(l, inspect.FindingOverAdmitted) || findingSeverity(l, inspect.FindingOverAdmitted) != inspect.SeverityError {
		t.Errorf("--permits 1: findings %v", l.Findings)
	}
	if l := readOne(t, c, key, inspect.Options{Permits: 2}); hasFinding(l, inspect.FindingOverAdmitted) {
		t.Errorf("--permits 2: findings %v", l.Findings)
	}
	if l := readOne(t, c, key, inspect.Options{ExpectOwner: []byte(b)}); l.OwnerCheck != "OWNED" {
		t.Errorf("--owner of a live holder: %s", l.OwnerCheck)
	}
	if l := readOne(t, c, key, inspect.Options{ExpectOwner: []byte(crashed)}); l.OwnerCheck != "NOT_OWNED" {
		t.Errorf("--owner of an expired holder: %s", l.OwnerCheck)
	}
}

func TestRedisMultiSemaphore(t *testing.T) {
	c := client(t)
	key := "semaphore:" + strings.ReplaceAll(redistest.Name(t), "/", "_")
	multi, single := guid(), guid()+"-worker7" // identifierSuffix "worker7"
	semaphoreAcquire(t, c, key, 3*time.Second, multiMembers(multi, 3)...)
	semaphoreAcquire(t, c, key, time.Second, single)
	l := readOne(t, c, key, inspect.Options{Permits: 3})
	if l.Layout.Name != "redis-semaphore" || l.Layout.Confidence != inspect.Certain {
		t.Fatalf("layout %+v", l.Layout)
	}
	if len(l.Holders) != 2 || l.Holders[0].Owner != multi || l.Holders[0].Permits != 3 || l.Holders[1].Owner != single {
		t.Errorf("holders %+v", l.Holders)
	}
	if inUse(l) != 4 || !hasFinding(l, inspect.FindingOverAdmitted) || hasFinding(l, inspect.FindingStaleHolders) {
		t.Errorf("permits in use %d, findings %v", inUse(l), l.Findings)
	}
}

// TestSemaphoreBoundedRead: a zset past the read bound is read in part
// (ZRANGE 0 127 and the top member); the permits in use still count them
// all when the oldest read is live.
func TestSemaphoreBoundedRead(t *testing.T) {
	c := client(t)
	key := "semaphore:" + strings.ReplaceAll(redistest.Name(t), "/", "_")
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = guid()
	}
	semaphoreAcquire(t, c, key, time.Second, ids...)
	l := readOne(t, c, key, inspect.Options{Permits: 999})
	if !l.Truncated || len(l.Holders) != inspect.DefaultMaxItems || l.ValueBytes != 1000 {
		t.Fatalf("truncated %v holders %d size %d", l.Truncated, len(l.Holders), l.ValueBytes)
	}
	if inUse(l) != 1000 || !hasFinding(l, inspect.FindingOverAdmitted) {
		t.Errorf("permits in use %d findings %v", inUse(l), l.Findings)
	}
}

func TestSymfonyLock(t *testing.T) {
	c := client(t)
	n := strings.ReplaceAll(redistest.Name(t), "/", "_")
	t.Run("write", func(t *testing.T) {
		key, tok := "sf:w:"+n, symfonyToken()
		symfonySave(t, c, key, tok, true, 300*time.Second) // initialTtl 300.0
		l := readOne(t, c, key, inspect.Options{ExpectOwner: []byte(tok)})
		if l.Layout.Name != "symfony-lock" || l.Layout.Confidence != inspect.Certain || l.Owner != tok || l.OwnerCheck != "OWNED" {
			t.Fatalf("layout %+v owner %q %s findings %v", l.Layout, l.Owner, l.OwnerCheck, l.Findings)
		}
		if len(l.Holders) != 1 || l.Holders[0].Mode != "write" || *l.Holders[0].TTLMS < 299000 || inUse(l) != 1 {
			t.Errorf("holders %+v in use %d", l.Holders, inUse(l))
		}
		// 300 s is over the 60 s cap; no TTL error, no WRONG_TYPE.
		if !hasFinding(l, inspect.FindingLeaseOverCap) || hasFinding(l, inspect.FindingWrongType) || hasFinding(l, inspect.FindingOverAdmitted) {
			t.Errorf("findings %v", l.Findings)
		}
	})
	t.Run("read", func(t *testing.T) {
		key := "sf:r:" + n
		stale, r1, r2 := symfonyToken(), symfonyToken(), symfonyToken()
		symfonySave(t, c, key, r1, false, 200*time.Second)
		symfonySave(t, c, key, r2, false, 300*time.Second)
		// A reader whose lease ended; the next save removes it (ZREMRANGEBYSCORE -inf now).
		must(t, c.ZAdd(ctx, key, redis.Z{Score: float64(time.Now().Add(-time.Second).UnixMilli()), Member: stale}).Err())
		l := readOne(t, c, key, inspect.Options{Permits: 1})
		if l.Layout.Name != "symfony-lock" || l.Layout.Confidence != inspect.Likely || l.Owner != "" {
			t.Fatalf("layout %+v owner %q", l.Layout, l.Owner)
		}
		if got := strings.Join(holderOwners(l), ","); got != stale+","+r1+","+r2 || l.Holders[1].Mode != "read" || !l.Holders[0].Expired {
			t.Errorf("holders %+v", l.Holders)
		}
		if inUse(l) != 2 || !hasFinding(l, inspect.FindingOverAdmitted) || !hasFinding(l, inspect.FindingStaleHolders) {
			t.Errorf("in use %d findings %v", inUse(l), l.Findings)
		}
	})
	t.Run("writer-and-reader", func(t *testing.T) {
		key, w, r := "sf:wr:"+n, symfonyToken(), symfonyToken()
		symfonySave(t, c, key, r, false, 100*time.Second)
		symfonySave(t, c, key, w, true, 300*time.Second) // no library call leaves this
		l := readOne(t, c, key, inspect.Options{})
		if !hasFinding(l, inspect.FindingOverAdmitted) || findingSeverity(l, inspect.FindingOverAdmitted) != inspect.SeverityError || l.Owner != w {
			t.Errorf("owner %q findings %v", l.Owner, l.Findings)
		}
	})
}

func TestRedissonPermitExpirableSemaphore(t *testing.T) {
	c := client(t)
	name := strings.ReplaceAll(redistest.Name(t), "/", "_")
	timeout := "{" + name + "}:timeout" // suffixName(name, "timeout")
	// trySetPermits(3), then acquire(2 s lease) and acquire() without one:
	// DECRBY 1 each, ZADD <now+lease ms | 922337203685477> <16 id bytes>.
	must(t, c.Set(ctx, name, "1", 0).Err())
	id1, id2 := make([]byte, 16), make([]byte, 16)
	_, _ = rand.Read(id1)
	_, _ = rand.Read(id2)
	must(t, c.ZAdd(ctx, timeout, redis.Z{Score: float64(time.Now().Add(2 * time.Second).UnixMilli()), Member: id1},
		redis.Z{Score: 922337203685477, Member: id2}).Err())
	l := readOne(t, c, timeout, inspect.Options{ExpectOwner: []byte(hex.EncodeToString(id2))})
	if l.Layout.Name != "redisson-permit-semaphore" || l.Layout.Confidence != inspect.Certain {
		t.Fatalf("layout %+v findings %v", l.Layout, l.Findings)
	}
	if l.Permits == nil || *l.Permits != 3 || inUse(l) != 2 || l.OwnerCheck != "OWNED" {
		t.Errorf("permits %v in use %d owner check %s", l.Permits, inUse(l), l.OwnerCheck)
	}
	if len(l.Holders) != 2 || l.Holders[0].Owner != hex.EncodeToString(id1) || l.Holders[1].ExpiresAt != "" || l.Holders[1].TTLMS != nil {
		t.Errorf("holders %+v", l.Holders)
	}
	// No Redis TTL is the layout's default: expired ids are reclaimed by the next acquire.
	if hasFinding(l, inspect.FindingNoTTL) || hasFinding(l, inspect.FindingBinaryValue) || len(l.Companions) != 1 || l.Companions[0].Key != name {
		t.Errorf("findings %v companions %+v", l.Findings, l.Companions)
	}
}

func TestRedissonReadWriteHolders(t *testing.T) {
	c := client(t)
	n := strings.ReplaceAll(redistest.Name(t), "/", "_")
	u1, u2, u3 := guid(), guid(), guid()
	// RedissonReadLock.tryLockInnerAsync: HSET mode read, HINCRBY
	// "<uuid>:<threadId>" per hold, SET "{name}:<uuid>:<threadId>:rwlock_timeout:<n>"
	// 1 with PEXPIRE leaseTime (30 s watchdog) for the n-th hold, PEXPIRE
	// the hash. u3's process died: its hold keys expired, u1 and u2 renew.
	name := "rw:r:" + n
	must(t, c.HSet(ctx, name, "mode", "read", u1+":1", "2", u2+":57", "1", u3+":3", "1").Err())
	must(t, c.PExpire(ctx, name, 30*time.Second).Err())
	for _, k := range []string{"{" + name + "}:" + u1 + ":1:rwlock_timeout:1", "{" + name + "}:" + u1 + ":1:rwlock_timeout:2", "{" + name + "}:" + u2 + ":57:rwlock_timeout:1"} {
		must(t, c.Set(ctx, k, "1", 30*time.Second).Err())
	}
	l := readOne(t, c, name, inspect.Options{Permits: 1})
	if l.Layout.Name != "redisson-rw" || len(l.Holders) != 3 || *l.Holders[0].HoldCount != 2 || l.Holders[1].Mode != "read" {
		t.Fatalf("layout %+v holders %+v", l.Layout, l.Holders)
	}
	if h := l.Holders[0]; h.Expired || h.TTLMS == nil || *h.TTLMS < 29000 || !l.Holders[2].Expired || l.Holders[2].TTLMS != nil {
		t.Errorf("holders %+v: want u1 with ~30s left, u3 expired", l.Holders)
	}
	if inUse(l) != 2 || !hasFinding(l, inspect.FindingOverAdmitted) || !hasFinding(l, inspect.FindingStaleHolders) {
		t.Errorf("in use %d findings %v", inUse(l), l.Findings)
	}
	// A read lease met on its own is the lock's companion, no constant-owner lock.
	if l := readOne(t, c, "{"+name+"}:"+u1+":1:rwlock_timeout:2", inspect.Options{}); l.Layout.Name != "redisson-rw" || l.Role != inspect.RoleReadLease || len(l.Findings) != 0 {
		t.Errorf("read lease key: layout %+v role %q findings %v", l.Layout, l.Role, l.Findings)
	}
	// A writer may also hold read locks in its own thread (RedissonWriteLock); another thread may not.
	must(t, c.HSet(ctx, "rw:w:"+n, "mode", "write", u1+":1:write", "1", u1+":1", "1").Err())
	must(t, c.PExpire(ctx, "rw:w:"+n, 30*time.Second).Err())
	must(t, c.Set(ctx, "{rw:w:"+n+"}:"+u1+":1:rwlock_timeout:1", "1", 30*time.Second).Err())
	if l := readOne(t, c, "rw:w:"+n, inspect.Options{}); hasFinding(l, inspect.FindingOverAdmitted) || inUse(l) != 1 {
		t.Errorf("writer with its own read hold: in use %d findings %v", inUse(l), l.Findings)
	}
	must(t, c.HSet(ctx, "rw:w:"+n, u2+":9", "1").Err())
	must(t, c.Set(ctx, "{rw:w:"+n+"}:"+u2+":9:rwlock_timeout:1", "1", 30*time.Second).Err())
	if l := readOne(t, c, "rw:w:"+n, inspect.Options{}); !hasFinding(l, inspect.FindingOverAdmitted) {
		t.Errorf("writer and another thread: findings %v", l.Findings)
	}
}

// TestZsetNoLayout: a zset no semaphore or shared lock writes is layout
// unknown: scored by times, a holder or lease set with its members as
// holders; otherwise a zset, WRONG_TYPE at info. Never an error (issue 27).
func TestZsetNoLayout(t *testing.T) {
	c := client(t)
	n := strings.ReplaceAll(redistest.Name(t), "/", "_")
	keys := map[string][]redis.Z{
		"leaderboard:" + n:        {{Score: 10, Member: "alice"}, {Score: 20, Member: "bob"}},
		"semaphore:" + n:          {{Score: 3, Member: guid()}},                                    // a score no clock gives
		"sf:" + n:                 {{Score: float64(time.Now().UnixMilli()), Member: "__write__"}}, // no token
		"{" + n + "}:timeout":     {{Score: float64(time.Now().UnixMilli()), Member: "not-16-bytes"}},
		"semaphore:nan:" + n:      {{Score: 1, Member: "x"}},
		"plain:" + n + ":timeout": {{Score: float64(time.Now().UnixMilli()), Member: "0123456789abcdef"}}, // no {name}
	}
	for k, zs := range keys {
		must(t, c.ZAdd(ctx, k, zs...).Err())
		l := readOne(t, c, k, inspect.Options{Permits: 1})
		timed := zs[0].Score > 1e12
		switch {
		case l.Layout.Name != "unknown" || l.Worst() == inspect.SeverityError:
			t.Errorf("%s: layout %+v findings %v", k, l.Layout, l.Findings)
		case timed && (l.Layout.Shape != inspect.ShapeTimeZset || len(l.Holders) != 1 || hasFinding(l, inspect.FindingWrongType)):
			t.Errorf("%s (scored by a time): layout %+v holders %+v findings %v", k, l.Layout, l.Holders, l.Findings)
		case !timed && (l.Layout.Shape != inspect.ShapeZset || l.Holders != nil || findingSeverity(l, inspect.FindingWrongType) != inspect.SeverityInfo):
			t.Errorf("%s: layout %+v holders %+v findings %v", k, l.Layout, l.Holders, l.Findings)
		}
	}
}

// TestWatchOverAdmitted: one OVER_ADMITTED event per episode, and a
// semaphore's holders named by their count.
func TestWatchOverAdmitted(t *testing.T) {
	at := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	var samples []inspect.Sample
	for i, over := range []string{"", "3 permits in use, over the 2 --permits allows", "3 permits in use, over the 2 --permits allows", "", "4 permits in use"} {
		samples = append(samples, inspect.Sample{At: at.Add(time.Duration(i) * 100 * time.Millisecond), Key: "semaphore:x", Exists: true,
			Type: "zset", PTTLMS: 9000 - int64(i)*100, OverAdmitted: over, Holders: 2})
	}
	var got []string
	for _, e := range inspect.Derive(samples, inspect.WatchOptions{}) {
		got = append(got, e.Event+" "+e.Message)
	}
	want := "HELD held by 2 holders, 9s left|OVER_ADMITTED 3 permits in use, over the 2 --permits allows|OVER_ADMITTED 4 permits in use"
	if strings.Join(got, "|") != want {
		t.Errorf("events\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
}

// TestRedissonPermitsCounterOverflow: a counter near the int64 limit, or
// below zero, gives no semaphore size rather than a wrapped negative one.
func TestRedissonPermitsCounterOverflow(t *testing.T) {
	c := client(t)
	for _, counter := range []string{"9223372036854775807", "-5"} {
		name := strings.ReplaceAll(redistest.Name(t), "/", "_") + counter
		timeout := "{" + name + "}:timeout"
		must(t, c.Set(ctx, name, counter, 0).Err())
		id := make([]byte, 16)
		_, _ = rand.Read(id)
		must(t, c.ZAdd(ctx, timeout, redis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()), Member: id}).Err())
		l := readOne(t, c, timeout, inspect.Options{Permits: 1})
		if l.Layout.Name != "redisson-permit-semaphore" || l.Permits != nil || inUse(l) != 1 {
			t.Errorf("counter %s: layout %+v permits %v in use %d", counter, l.Layout, l.Permits, inUse(l))
		}
	}
}

// redissonTrySetPermits and redissonAcquire replay RPermitExpirableSemaphore's
// scripts (redisson-4.7.0, RedissonPermitExpirableSemaphore.java):
// trySetPermitsAsync SETs <name> to the permits when it is absent;
// tryAcquireAsync DECRBYs it, ZADDs suffixName(name, "timeout") <now+lease ms,
// or 922337203685477 without a lease> <the id's 16 bytes> and PEXPIREs the
// zset to the counter's PTTL when it has one (none here).
func redissonTrySetPermits(t *testing.T, c *redis.Client, name string, permits int) {
	t.Helper()
	must(t, c.SetNX(ctx, name, permits, 0).Err())
}

func redissonAcquire(t *testing.T, c *redis.Client, name, timeout string, lease time.Duration) {
	t.Helper()
	id := make([]byte, 16) // ServiceManager.generateIdArray(16)
	_, _ = rand.Read(id)
	score := float64(922337203685477)
	if lease > 0 {
		score = float64(time.Now().Add(lease).UnixMilli())
	}
	must(t, c.DecrBy(ctx, name, 1).Err())
	must(t, c.ZAdd(ctx, timeout, redis.Z{Score: score, Member: id}).Err())
}

// redissonRelease replays tryReleaseAsync for the oldest permit: ZREM the
// id, INCRBY the counter (the last ZREM deletes the zset).
func redissonRelease(t *testing.T, c *redis.Client, name, timeout string) {
	t.Helper()
	ids := c.ZRange(ctx, timeout, 0, 0).Val()
	must(t, c.ZRem(ctx, timeout, ids[0]).Err())
	must(t, c.IncrBy(ctx, name, 1).Err())
}

// pipeHook records the size of each pipeline sent: the round trips of a read.
type pipeHook struct{ sizes []int }

func (h *pipeHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *pipeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *pipeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.sizes = append(h.sizes, len(cmds))
		return next(ctx, cmds)
	}
}

// TestRedissonPermitsCounterAlone: the counter of an RPermitExpirableSemaphore
// met on its own (--key, --pattern) is its permits_counter, known by the
// zset at suffixName(name, "timeout"). It was judged a broken lock: NO_TTL
// and, at 1 permit left, CONSTANT_OWNER. An integer with no such zset (a
// plain counter, or a semaphore with no permit taken: the zset is gone) is
// a counter: no owner token, so no TTL is no fault (issue 27).
func TestRedissonPermitsCounterAlone(t *testing.T) {
	s := redistest.Shared(t)
	c := s.Client(t)
	n := strings.ReplaceAll(redistest.Name(t), "/", "_")
	sem, braced := "t:"+n+":sem", "{t:"+n+"}:braced"
	timeouts := map[string]string{sem: "{" + sem + "}:timeout", braced: braced + ":timeout"}
	for name, timeout := range timeouts {
		// trySetPermits(3), acquire(30 s lease), acquire(): 1 permit left.
		redissonTrySetPermits(t, c, name, 3)
		redissonAcquire(t, c, name, timeout, 30*time.Second)
		redissonAcquire(t, c, name, timeout, 0)
	}
	released := "t:" + n + ":released"
	redissonTrySetPermits(t, c, released, 2)
	redissonAcquire(t, c, released, "{"+released+"}:timeout", 30*time.Second)
	redissonRelease(t, c, released, "{"+released+"}:timeout")
	plain1, plain42 := "t:"+n+":plain1", "t:"+n+":plain42"
	must(t, c.Set(ctx, plain1, "1", 0).Err())
	must(t, c.Set(ctx, plain42, "42", 0).Err())
	// An integer without the zset and without a lock's name is a counter: no findings.
	plain := map[string]string{plain1: "", plain42: "", released: ""}

	isCounter := func(l inspect.Lock) bool {
		return l.Layout.Name == "redisson-permit-semaphore" && l.Layout.Confidence == inspect.Certain &&
			l.Role == inspect.RolePermits && codes(l) == "" && l.Companions == nil
	}
	for name := range timeouts {
		if l := readOne(t, c, name, inspect.Options{}); !isCounter(l) {
			t.Errorf("%s: layout %+v role %q findings %s companions %+v", name, l.Layout, l.Role, codes(l), l.Companions)
		}
	}
	for k, want := range plain {
		if l := readOne(t, c, k, inspect.Options{}); codes(l) != want || l.Role != "" || l.Layout.Name != "unknown" || l.Layout.Shape != inspect.ShapeCounter {
			t.Errorf("%s: layout %+v role %q findings %s, want %s", k, l.Layout, l.Role, codes(l), want)
		}
	}

	// A scan, as inspect --pattern reads: the counters are companions, their zsets the semaphores.
	r := &inspect.Reader{Light: true, MaxValueBytes: inspect.ScanMaxValueBytes}
	got := map[string]inspect.Lock{}
	must(t, r.Scan(ctx, c, inspect.ScanOptions{Pattern: "*" + inspect.GlobEscape(n) + "*"}, func(l inspect.Lock) error {
		got[l.Key] = l
		return nil
	}))
	if len(got) != 7 {
		t.Fatalf("scanned %d keys, want 7: %v", len(got), got)
	}
	for name, timeout := range timeouts {
		if l := got[name]; !isCounter(l) {
			t.Errorf("scan %s: layout %+v role %q findings %s", name, l.Layout, l.Role, codes(l))
		}
		if l := got[timeout]; l.Layout.Name != "redisson-permit-semaphore" || l.Permits == nil || *l.Permits != 3 || inUse(l) != 2 || codes(l) != "NO_FENCE:warning" {
			t.Errorf("scan %s: layout %+v permits %v in use %d findings %s", timeout, l.Layout, l.Permits, inUse(l), codes(l))
		}
	}
	for k, want := range plain {
		if l := got[k]; codes(l) != want || l.Role != "" {
			t.Errorf("scan %s: role %q findings %s, want %s", k, l.Role, codes(l), want)
		}
	}
	var locks []inspect.Lock
	for _, l := range got {
		locks = append(locks, l)
	}
	if sum := inspect.NewReport(locks).Summary; sum.Locks != 5 || sum.Companions != 2 || sum.ByLayout["redisson-permit-semaphore"] != 2 {
		t.Errorf("summary %+v", sum)
	}

	// The cost: integer keys get no third round trip, TYPE probes in the second.
	h := &pipeHook{}
	hc := redis.NewClient(&redis.Options{Addr: s.Addr, DisableIdentity: true}) // no CLIENT SETINFO pipeline
	defer hc.Close()
	hc.AddHook(h)
	keys := []string{plain1, plain42, released}
	_, err := r.Read(ctx, hc, keys)
	must(t, err)
	if len(h.sizes) != 2 {
		t.Errorf("pipelines of %v commands, want 2 (PTTL+GETRANGE each, then TYPE probes)", h.sizes)
	}

	// An ACL scoped to the counters refuses the zset's TYPE: not there, a counter.
	user := n + "-scoped"
	must(t, c.Do(ctx, "acl", "setuser", user, "reset", "on", ">pw", "~t:"+n+":*", "+@read", "+@connection").Err())
	t.Cleanup(func() { c.Do(ctx, "acl", "deluser", user) })
	sc := redis.NewClient(&redis.Options{Addr: s.Addr, Username: user, Password: "pw"})
	defer sc.Close()
	if l := readOne(t, sc, sem, inspect.Options{}); codes(l) != "" || l.Role != "" || l.Layout.Shape != inspect.ShapeCounter {
		t.Errorf("zset refused: role %q findings %s", l.Role, codes(l))
	}
}
