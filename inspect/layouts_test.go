package inspect_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

var ctx = context.Background()

func client(t testing.TB) *redis.Client {
	return redistest.Shared(t).Client(t)
}

// readOne inspects one key on the shared server.
func readOne(t testing.TB, c redis.Cmdable, key string, opts inspect.Options) inspect.Lock {
	t.Helper()
	r := &inspect.Reader{Options: opts}
	locks, err := r.Read(ctx, c, []string{key})
	if err != nil {
		t.Fatal(err)
	}
	return locks[0]
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func guid() string {
	h := randHex(16)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:]
}

// uuid1Hex builds the hex of a version-1 UUID at t, as Python's uuid.uuid1().hex.
func uuid1Hex(t time.Time) string {
	ticks := uint64(t.UnixNano()/100) + 122192928000000000
	low, mid, hi := uint32(ticks), uint16(ticks>>32), uint16(ticks>>48)&0x0fff|0x1000
	return fmt.Sprintf("%08x%04x%04x%04x%s", low, mid, hi, 0x8000|uint16(ticks)&0x3fff, randHex(6))
}

func hasFinding(l inspect.Lock, code string) bool {
	for _, f := range l.Findings {
		if f.Code == code {
			return true
		}
	}
	return false
}

func findingSeverity(l inspect.Lock, code string) inspect.Severity {
	for _, f := range l.Findings {
		if f.Code == code {
			return f.Severity
		}
	}
	return ""
}

// TestLayouts creates each library's lock on a real Redis, with the real
// library where it is in Go (redsync, bsm/redislock, lockctl) and by
// replaying the exact commands the library sends elsewhere, then checks the
// detected layout and confidence.
func TestLayouts(t *testing.T) {
	c := client(t)
	n := func(t *testing.T) string { return strings.ReplaceAll(redistest.Name(t), "/", "_") }
	acquiredAt := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	cases := []struct {
		name       string
		layout     string
		confidence inspect.Confidence
		setup      func(t *testing.T) string
		check      func(t *testing.T, l inspect.Lock)
	}{
		{"lockctl", "lockctl", inspect.Certain, func(t *testing.T) string {
			ks, err := lockcore.NewKeySpec("OrderId", "", "", false)
			must(t, err)
			lk, err := lockcore.NewLocker(c).Acquire(ctx, ks.Keys(n(t)), 30*time.Second)
			must(t, err)
			return lk.Keys.Lock
		}, func(t *testing.T, l inspect.Lock) {
			// The first acquire starts the counter from the server's TIME in µs.
			if l.Fence == nil || *l.Fence.Value <= math.MaxInt32 || *l.Fence.Counter != *l.Fence.Value {
				t.Errorf("fence = %+v, want a TIME-started value equal to the counter", l.Fence)
			}
			if len(l.Owner) != 32 || hasFinding(l, inspect.FindingNoFence) {
				t.Errorf("owner %q findings %v", l.Owner, l.Findings)
			}
		}},
		// redsync and redislock write a shared token shape under the caller's
		// key: a generic base64 token seen in them, never their name (issue 27).
		{"redsync", "unknown", inspect.Guess, func(t *testing.T) string {
			m := redsync.New(goredis.NewPool(c)).NewMutex("rs:"+n(t), redsync.WithExpiry(20*time.Second))
			must(t, m.LockContext(ctx))
			return "rs:" + n(t)
		}, func(t *testing.T, l inspect.Lock) {
			if l.Layout.Shape != inspect.ShapeBase64Token || !slices.Contains(l.Layout.SeenIn, "redsync") || len(l.Findings) != 0 {
				t.Errorf("layout %+v findings %v, want a base64-token seen in redsync, no findings", l.Layout, l.Findings)
			}
		}},
		{"redislock", "unknown", inspect.Guess, func(t *testing.T) string {
			_, err := redislock.New(c).Obtain(ctx, "bsm:"+n(t), 20*time.Second, nil)
			must(t, err)
			return "bsm:" + n(t)
		}, nil},
		{"redislock-metadata", "unknown", inspect.Guess, func(t *testing.T) string {
			_, err := redislock.New(c).Obtain(ctx, "bsm:"+n(t), 20*time.Second, &redislock.Options{Metadata: "worker-7"})
			must(t, err)
			return "bsm:" + n(t)
		}, func(t *testing.T, l inspect.Lock) {
			if l.Holder == nil || l.Holder.Metadata != "worker-7" || len(l.Owner) != 22 || !slices.Contains(l.Layout.SeenIn, "redislock") {
				t.Errorf("holder %+v owner %q layout %+v", l.Holder, l.Owner, l.Layout)
			}
		}},
		{"redisson", "redisson", inspect.Certain, func(t *testing.T) string {
			// redisson/redisson tag redisson-3.52.0, redisson/src/main/java/org/redisson/
			// RedissonLock.java tryLockInnerAsync: hincrby <name> <uuid:thread> 1; pexpire <name> 30000.
			must(t, c.HIncrBy(ctx, n(t), "ea0fb3b6-09e2-4393-9e82-3b822e5e76c3:1", 1).Err())
			must(t, c.PExpire(ctx, n(t), 30*time.Second).Err())
			return n(t)
		}, func(t *testing.T, l inspect.Lock) {
			if l.HoldCount == nil || *l.HoldCount != 1 || l.Holder.ClientID != "ea0fb3b6-09e2-4393-9e82-3b822e5e76c3" || l.Holder.Thread != "1" {
				t.Errorf("hold count %v holder %+v", l.HoldCount, l.Holder)
			}
		}},
		{"redis-py", "redis-py", inspect.Likely, func(t *testing.T) string {
			// redis-py v4.3.4 (Debian python3-redis), redis/lock.py do_acquire: SET name token NX PX timeout*1000.
			must(t, c.SetArgs(ctx, "py:"+n(t), uuid1Hex(acquiredAt), redis.SetArgs{Mode: "NX", TTL: 10 * time.Second}).Err())
			return "py:" + n(t)
		}, func(t *testing.T, l inspect.Lock) {
			if l.Holder == nil || l.Holder.AcquiredAt != acquiredAt.Format("2006-01-02T15:04:05.000Z") {
				t.Errorf("holder %+v, want acquired_at from the UUID1 timestamp", l.Holder)
			}
		}},
		{"python-redis-lock", "python-redis-lock", inspect.Likely, func(t *testing.T) string {
			// ionelmc/python-redis-lock tag v4.0.0, src/redis_lock/__init__.py acquire: SET lock:<name> b64encode(urandom(18)) NX EX expire.
			id := base64.StdEncoding.EncodeToString([]byte(randHex(9)))
			must(t, c.SetArgs(ctx, "lock:"+n(t), id, redis.SetArgs{Mode: "NX", TTL: 60 * time.Second}).Err())
			return "lock:" + n(t)
		}, nil},
		{"python-redis-lock-signal", "python-redis-lock", inspect.Certain, func(t *testing.T) string {
			id := base64.StdEncoding.EncodeToString([]byte(randHex(9)))
			must(t, c.SetArgs(ctx, "lock:{"+n(t)+"}", id, redis.SetArgs{Mode: "NX", TTL: 60 * time.Second}).Err())
			// tag v4.0.0 UNLOCK_SCRIPT of the previous holder: del, lpush signal 1, pexpire signal.
			must(t, c.LPush(ctx, "lock-signal:{"+n(t)+"}", 1).Err())
			must(t, c.PExpire(ctx, "lock-signal:{"+n(t)+"}", time.Minute).Err())
			return "lock:{" + n(t) + "}"
		}, func(t *testing.T, l inspect.Lock) {
			if hasFinding(l, inspect.FindingCrossSlot) || len(l.Companions) != 1 {
				t.Errorf("hash-tagged keys share a slot: %v %v", l.Findings, l.Companions)
			}
		}},
		// node-redlock's 32 random hex name no library (issue 27): a generic hex token.
		{"node-redlock", "unknown", inspect.Guess, func(t *testing.T) string {
			// redlock 5.0.0-beta.2 (npm) src/index.ts ACQUIRE_SCRIPT: set KEYS[i] ARGV[1] PX ARGV[2], value randomBytes(16) hex.
			v := randHex(16)
			v = v[:12] + "4" + v[13:]
			must(t, c.Set(ctx, "node:"+n(t), v, 10*time.Second).Err())
			return "node:" + n(t)
		}, nil},
		{"shedlock", "shedlock", inspect.Certain, func(t *testing.T) string {
			// lukas-krecan/ShedLock tag shedlock-parent-7.9.0, shedlock-support-redis
			// InternalRedisLockProvider (older releases without the ":<uuid>"): SET job-lock:<env>:<name> ADDED:<iso>@<host> NX PX lockAtMostFor.
			k := "job-lock:default:" + n(t)
			must(t, c.SetArgs(ctx, k, "ADDED:2026-05-12T13:31:45.006Z@lixin-macbook.local", redis.SetArgs{Mode: "NX", TTL: time.Minute}).Err())
			return k
		}, func(t *testing.T, l inspect.Lock) {
			if l.Holder.Host != "lixin-macbook.local" || l.Holder.AcquiredAt != "2026-05-12T13:31:45.006Z" {
				t.Errorf("holder %+v", l.Holder)
			}
		}},
		{"redisson-fenced", "redisson-fenced", inspect.Certain, func(t *testing.T) string {
			// redisson tag redisson-3.52.0, RedissonFencedLock.java tryLockInnerAsync: incr KEYS[2]; hincrby; pexpire.
			must(t, c.Set(ctx, "redisson_lock_token:{"+n(t)+"}", 33, 0).Err())
			must(t, c.Incr(ctx, "redisson_lock_token:{"+n(t)+"}").Err())
			must(t, c.HIncrBy(ctx, n(t), "0d4a5d1e-1f43-4a5e-9cdb-3a2b1c9f8e7d:57", 1).Err())
			must(t, c.PExpire(ctx, n(t), 30*time.Second).Err())
			return n(t)
		}, func(t *testing.T, l inspect.Lock) {
			if l.Fence == nil || l.Fence.Counter == nil || *l.Fence.Counter != 34 || l.Fence.Value != nil || hasFinding(l, inspect.FindingNoFence) {
				t.Errorf("fence %+v findings %v", l.Fence, l.Findings)
			}
		}},
		{"redisson-fair", "redisson-fair", inspect.Certain, func(t *testing.T) string {
			// redisson tag redisson-3.52.0, RedissonFairLock.java: the holder's hash plus the waiters' queue and timeout zset.
			must(t, c.HIncrBy(ctx, n(t), "0d4a5d1e-1f43-4a5e-9cdb-3a2b1c9f8e7d:1", 1).Err())
			must(t, c.PExpire(ctx, n(t), 30*time.Second).Err())
			must(t, c.RPush(ctx, "redisson_lock_queue:{"+n(t)+"}", "0d4a5d1e-1f43-4a5e-9cdb-3a2b1c9f8e7d:2").Err())
			must(t, c.ZAdd(ctx, "redisson_lock_timeout:{"+n(t)+"}", redis.Z{Score: float64(time.Now().Add(35 * time.Second).UnixMilli()), Member: "0d4a5d1e-1f43-4a5e-9cdb-3a2b1c9f8e7d:2"}).Err())
			return n(t)
		}, func(t *testing.T, l inspect.Lock) {
			if len(l.Waiters) != 1 || l.Waiters[0] != "0d4a5d1e-1f43-4a5e-9cdb-3a2b1c9f8e7d:2" {
				t.Errorf("waiters %v", l.Waiters)
			}
		}},
		{"redisson-rw", "redisson-rw", inspect.Certain, func(t *testing.T) string {
			// redisson tag redisson-3.52.0, RedissonReadLock.java: hset <name> mode read; hincrby <name> <uuid:thread> 1; pexpire.
			must(t, c.HSet(ctx, n(t), "mode", "read").Err())
			must(t, c.HIncrBy(ctx, n(t), "0d4a5d1e-1f43-4a5e-9cdb-3a2b1c9f8e7d:1", 1).Err())
			must(t, c.PExpire(ctx, n(t), 30*time.Second).Err())
			return n(t)
		}, func(t *testing.T, l inspect.Lock) {
			if l.Holder.Mode != "read" {
				t.Errorf("mode %q", l.Holder.Mode)
			}
		}},
		// spring-integration's bare UUID names no library (issue 27).
		{"spring-integration", "unknown", inspect.Guess, func(t *testing.T) string {
			// spring-projects/spring-integration tag v6.5.10, spring-integration-redis/
			// .../redis/util/RedisLockRegistry.java OBTAIN_LOCK_SCRIPT: SET KEYS[1] ARGV[1] PX ARGV[2], value clientId UUID.
			k := "registry:" + n(t)
			must(t, c.Set(ctx, k, guid(), time.Minute).Err())
			return k
		}, nil},
		{"distributedlock", "distributedlock", inspect.Certain, func(t *testing.T) string {
			// madelson/DistributedLock tag 2.8.1, src/DistributedLock.Redis/Primitives/
			// RedisMutexPrimitive.cs TryAcquire: SET key lockId NX PX expiry.
			must(t, c.SetArgs(ctx, "dl:"+n(t), "web-01_4242_"+randHex(16), redis.SetArgs{Mode: "NX", TTL: 30 * time.Second}).Err())
			return "dl:" + n(t)
		}, func(t *testing.T, l inspect.Lock) {
			if l.Holder.Host != "web-01" || l.Holder.PID != 4242 {
				t.Errorf("holder %+v", l.Holder)
			}
		}},
		{"freeredis", "freeredis", inspect.Certain, func(t *testing.T) string {
			// 2881099/FreeRedis tag v1.0.1, src/FreeRedis/RedisClient/Modules/Lock.cs Lock():
			// SetNx RedisClientLock:<name> Guid.NewGuid() timeoutSeconds.
			must(t, c.SetArgs(ctx, "RedisClientLock:"+n(t), guid(), redis.SetArgs{Mode: "NX", TTL: 10 * time.Second}).Err())
			return "RedisClientLock:" + n(t)
		}, nil},
		{"csredis", "csredis", inspect.Certain, func(t *testing.T) string {
			// 2881099/csredis tag v3.8.668, src/CSRedisCore/CSRedisClient.cs Lock():
			// SetNx CSRedisClientLock:<name> Guid.NewGuid() timeoutSeconds.
			must(t, c.SetArgs(ctx, "CSRedisClientLock:"+n(t), guid(), redis.SetArgs{Mode: "NX", TTL: 10 * time.Second}).Err())
			return "CSRedisClientLock:" + n(t)
		}, nil},
		{"laravel", "laravel", inspect.Likely, func(t *testing.T) string {
			// php-illuminate-cache 8.83.26 (Debian), src/Illuminate/Cache/RedisLock.php acquire: SET <prefix><name> <Str::random()> EX seconds NX.
			must(t, c.SetArgs(ctx, "laravel_cache:"+n(t), "aB3dE5fG7hJ9kL1m", redis.SetArgs{Mode: "NX", TTL: 10 * time.Second}).Err())
			return "laravel_cache:" + n(t)
		}, nil},
		// Likely: its digest key "uniquejobs:<md5>" (a companion) is not there.
		{"sidekiq-unique-jobs", "sidekiq-unique-jobs", inspect.Likely, func(t *testing.T) string {
			// mhenrixon/sidekiq-unique-jobs tag v8.1.0, lib/sidekiq_unique_jobs/lua/lock.lua: HSET <digest>:LOCKED <jid> <current_time>; PEXPIRE when the job has a TTL.
			d := "uniquejobs:" + randHex(16)
			must(t, c.HSet(ctx, d+":LOCKED", "a2c4e6a8b0c2d4e6f8a0b2c4", "1778592705.006").Err())
			must(t, c.PExpire(ctx, d+":LOCKED", time.Minute).Err())
			return d + ":LOCKED"
		}, func(t *testing.T, l inspect.Lock) {
			if l.Holder.JobID != "a2c4e6a8b0c2d4e6f8a0b2c4" || l.Holder.AcquiredAt != "2026-05-12T13:31:45.006Z" {
				t.Errorf("holder %+v", l.Holder)
			}
		}},
		{"redis-lock-gem", "redis-lock-gem", inspect.Certain, func(t *testing.T) string {
			// mlanett/redis-lock tag v0.2.7, lib/redis-lock.rb do_lock: MSETNX lock:owner:<key> <host:pid> lock:expire:<key> <now+life>.
			exp := strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10)
			must(t, c.MSetNX(ctx, "lock:owner:"+n(t), "worker-3:9120", "lock:expire:"+n(t), exp).Err())
			return "lock:owner:" + n(t)
		}, func(t *testing.T, l inspect.Lock) {
			if l.Holder.Host != "worker-3" || l.Holder.PID != 9120 || l.Holder.ValueExpiresAt == "" {
				t.Errorf("holder %+v", l.Holder)
			}
			if findingSeverity(l, inspect.FindingNoTTL) != inspect.SeverityWarning {
				t.Errorf("want NO_TTL warning (expiry in a value), got %v", l.Findings)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := tc.setup(t)
			l := readOne(t, c, key, inspect.Options{})
			if l.Layout.Name != tc.layout || l.Layout.Confidence != tc.confidence {
				t.Fatalf("layout = %+v, want %s (%s); lock %+v", l.Layout, tc.layout, tc.confidence, l)
			}
			if !l.Exists || l.Owner == "" {
				t.Errorf("exists %v owner %q", l.Exists, l.Owner)
			}
			if tc.check != nil {
				tc.check(t, l)
			}
		})
	}
}
