package inspect_test

import (
	"encoding/base64"
	"encoding/hex"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// reportDay is the day issue 20 read the values it quotes: values whose
// time only makes sense then (a UUIDv1 from that day) are read "at" it.
var reportDay = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)

// fixture is one lock value a library writes, copied from the issue that
// found it misread or built by the library's own rule, cited by source.
type fixture struct {
	name string
	// source: library, version or tag, file that fixes the value's shape.
	source string
	key    string
	value  string
	// pttlMS is the TTL the library sets (0: none).
	pttlMS int64
	// counters are INCR counters next to the lock; lists, keys the library
	// pushes to (a signal list).
	counters map[string]int64
	lists    []string
	// readAt is the reader's clock (zero: now).
	readAt     time.Time
	opts       inspect.Options
	layout     string
	confidence inspect.Confidence
	candidates []string
	// shape is the generic shape of a value no layout names (Layout.Shape).
	shape    string
	owner    string
	findings string
	check    func(t *testing.T, l inspect.Lock)
}

// warlockNow is node-redis-warlock's id for a lock taken now: the 16 bytes
// of a UUIDv1 in standard base64 (lib/warlock.js lock()).
func warlockNow() string {
	raw, _ := hex.DecodeString(uuid1Hex(time.Now()))
	return base64.StdEncoding.EncodeToString(raw)
}

func fixtures() []fixture {
	nowMS := time.Now().UnixMilli()
	return []fixture{
		{name: "python-redis-lock default (no expiry)",
			source: "python-redis-lock v4.0.0 src/redis_lock/__init__.py: id b64encode(urandom(18)), SET NX EX expire=None; value from issue 20",
			key:    "lock:fx-report", value: "UuD4gq/mCzUjken8FHe/uSWP",
			opts:   inspect.Options{ExpectOwner: []byte("UuD4gq/mCzUjken8FHe/uSWP")},
			layout: "python-redis-lock", confidence: inspect.Likely, owner: "UuD4gq/mCzUjken8FHe/uSWP",
			findings: "NO_TTL:error,NO_FENCE:warning",
			check: func(t *testing.T, l inspect.Lock) {
				if l.OwnerCheck != "OWNED" {
					t.Errorf("--owner <real id>: %s", l.OwnerCheck)
				}
			}},
		{name: "python-redis-lock id shaped like bsm/redislock",
			source: "python-redis-lock v4.0.0 src/redis_lock/__init__.py: 1 id in 25 has 22 URL-safe characters ending in A/Q/g/w",
			key:    "lock:fx-shape", value: "UuD4gq0mCzUjken8FHe1uQWP", pttlMS: 60000,
			opts:   inspect.Options{ExpectOwner: []byte("UuD4gq0mCzUjken8FHe1uQWP")},
			layout: "python-redis-lock", confidence: inspect.Likely, owner: "UuD4gq0mCzUjken8FHe1uQWP",
			findings: "NO_FENCE:warning",
			check: func(t *testing.T, l inspect.Lock) {
				if l.OwnerCheck != "OWNED" {
					t.Errorf("--owner <real id>: %s", l.OwnerCheck)
				}
			}},
		{name: "python-redis-lock with its signal list",
			source: "python-redis-lock v4.0.0 src/redis_lock/__init__.py: UNLOCK_SCRIPT lpush lock-signal:<name> 1, pexpire signal_expire",
			key:    "lock:{fx-sig}", value: "UuD4gq/mCzUjken8FHe/uSWP", pttlMS: 60000, lists: []string{"lock-signal:{fx-sig}"},
			layout: "python-redis-lock", confidence: inspect.Certain, owner: "UuD4gq/mCzUjken8FHe/uSWP", findings: "NO_FENCE:warning"},
		{name: "python-redis-lock before 3.3 with its signal list",
			source: "python-redis-lock tag v3.2.0 src/redis_lock/__init__.py: self._id = urandom(16), SET NX EX; lpush lock-signal:<name> on release",
			key:    "lock:{fx-raw}", value: "\x9c\x01\xfe\x7a\x00\x11\x83\x42\xd5\x6e\x0f\xb0\x27\xe1\x94\x58", pttlMS: 60000, lists: []string{"lock-signal:{fx-raw}"},
			layout: "python-redis-lock", confidence: inspect.Likely, findings: "BINARY_VALUE:info,NO_FENCE:warning",
			check: func(t *testing.T, l inspect.Lock) {
				if l.OwnerHex != "9c01fe7a00118342d56e0fb027e19458" || len(l.Companions) != 1 || l.Companions[0].Role != inspect.RoleSignal {
					t.Errorf("owner hex %s companions %+v", l.OwnerHex, l.Companions)
				}
			}},
		{name: "16 raw bytes under lock: without a signal list",
			source: "python-redis-lock tag v3.2.0 src/redis_lock/__init__.py: urandom(16), as many others write",
			key:    "lock:{fx-raw-alone}", value: "\x9c\x01\xfe\x7a\x00\x11\x83\x42\xd5\x6e\x0f\xb0\x27\xe1\x94\x58", pttlMS: 60000,
			layout: "unknown", confidence: inspect.Guess, shape: inspect.ShapeBinary, findings: "BINARY_VALUE:info",
			check: func(t *testing.T, l inspect.Lock) {
				if !slices.Contains(l.Layout.SeenIn, "python-redis-lock") || l.Companions != nil {
					t.Errorf("seen in %v companions %+v", l.Layout.SeenIn, l.Companions)
				}
			}},
		{name: "16 printable characters beside a signal list",
			source: "python-redis-lock tag v3.2.0: its ids are raw bytes, never 16 letters and digits",
			key:    "lock:{fx-raw-text}", value: "aB3dE5fG7hJ9kL1m", pttlMS: 60000, lists: []string{"lock-signal:{fx-raw-text}"},
			layout: "unknown", confidence: inspect.Guess, shape: inspect.ShapeRandomToken, findings: ""},
		{name: "redsync under a lock: key",
			source: "redsync v4.18.1 mutex.go genValue: base64.StdEncoding of 16 random bytes; value from issue 20",
			key:    "lock:order-42", value: "IO/ELiJbxyZ/yOXW310MYA==", pttlMS: 8000,
			layout: "unknown", confidence: inspect.Guess, shape: inspect.ShapeBase64Token, owner: "IO/ELiJbxyZ/yOXW310MYA==", findings: "",
			check: func(t *testing.T, l inspect.Lock) {
				if len(l.Companions) != 0 {
					t.Errorf("companions %+v: lock-signal:order-42 does not exist", l.Companions)
				}
			}},
		{name: "node-redis-warlock from the issue",
			source: "node-redis-warlock 1.0.2 lib/warlock.js lock(): key <key>:lock, UUID.v1 bytes in base64, SET PX NX; value from issue 20",
			key:    "fx-job:lock", value: "eX2AsO3OEfGItFEzWRF//w==", pttlMS: 10000, readAt: reportDay,
			layout: "node-redis-warlock", confidence: inspect.Likely, owner: "eX2AsO3OEfGItFEzWRF//w==", findings: "NO_FENCE:warning",
			check: func(t *testing.T, l inspect.Lock) {
				if l.Holder == nil || l.Holder.AcquiredAt != "2026-12-01T21:30:48.251Z" {
					t.Errorf("holder %+v, want the UUIDv1 time", l.Holder)
				}
			}},
		{name: "node-redis-warlock read a week later",
			source: "node-redis-warlock 1.0.2 lib/warlock.js: the same id, its time no longer within a day of the read",
			key:    "fx-week:lock", value: "eX2AsO3OEfGItFEzWRF//w==", pttlMS: 10000, readAt: reportDay.AddDate(0, 0, 7),
			layout: "unknown", confidence: inspect.Guess, shape: inspect.ShapeBase64Token,
			owner: "eX2AsO3OEfGItFEzWRF//w==", findings: "",
			check: func(t *testing.T, l inspect.Lock) {
				if l.Holder != nil {
					t.Errorf("holder %+v: no time outside now ± 1 day", l.Holder)
				}
			}},
		{name: "node-redis-warlock now",
			source: "node-redis-warlock 1.0.2 lib/warlock.js lock(): UUID.v1 of the acquisition",
			key:    "fx-now:lock", value: warlockNow(), pttlMS: 10000,
			layout: "node-redis-warlock", confidence: inspect.Likely, findings: "NO_FENCE:warning"},
		{name: "go-zero RedisLock",
			source: "go-zero v1.10.3 core/stores/redis/redislock.go: id stringx.Randn(16), no prefix, PX seconds*1000+500; value from issue 20",
			key:    "fx-order-42", value: "UiQsN11IlQvtHSar", pttlMS: 3*1000 + 500,
			layout: "unknown", confidence: inspect.Guess, shape: inspect.ShapeRandomToken,
			owner: "UiQsN11IlQvtHSar", findings: ""},
		{name: "go-zero RedisLock default lease",
			source: "go-zero v1.10.3 core/stores/redis/redislock.go: seconds 0 by default, PX 0*1000+500: a lease set under 1 s",
			key:    "fx-zero-default", value: "UiQsN11IlQvtHSar", pttlMS: 500,
			layout: "unknown", confidence: inspect.Guess, shape: inspect.ShapeRandomToken,
			owner: "UiQsN11IlQvtHSar", findings: "SUBSECOND_LEASE:warning"},
		{name: "laravel default (no expiry)",
			source: "laravel php-illuminate-cache 8.83 src/Illuminate/Cache/RedisLock.php acquire(): SETNX <prefix><name> Str::random() when seconds is 0",
			key:    "laravel_cache:fx-report", value: "aB3dE5fG7hJ9kL1m",
			layout: "laravel", confidence: inspect.Likely, owner: "aB3dE5fG7hJ9kL1m", findings: "NO_TTL:error,NO_FENCE:warning"},
		{name: "redis-semaphore Mutex",
			source: "redis-semaphore 5.8.0 lib/RedisMutex.js: key mutex:<key>, crypto.randomUUID(), SET PX 10000 NX",
			key:    "mutex:fx-report", value: "0f8c1bd6-6a4b-4f0e-9c52-3d7e1a2b4c5d", pttlMS: 10000,
			layout: "redis-semaphore", confidence: inspect.Likely, owner: "0f8c1bd6-6a4b-4f0e-9c52-3d7e1a2b4c5d", findings: "NO_FENCE:warning"},
		{name: "@microfleet/ioredis-lock",
			source: "@microfleet/ioredis-lock 6.0.1 src/lock.ts: the key as given, randomUUID(), SET PX 10000 NX",
			key:    "fx-report", value: "7d3f2a1b-9c8e-4d6f-a5b4-c3d2e1f0a9b8", pttlMS: 10000,
			layout: "unknown", confidence: inspect.Guess, shape: inspect.ShapeUUID,
			owner: "7d3f2a1b-9c8e-4d6f-a5b4-c3d2e1f0a9b8", findings: ""},
		{name: "spring-integration",
			source: "spring-integration v6.5.10 spring-integration-redis/.../RedisLockRegistry.java: key <registryKey>:<path>, clientId UUID.randomUUID(), PX 60000",
			key:    "registry:fx-report", value: "3b1f5e7a-2c4d-4e6f-8a9b-0c1d2e3f4a5b", pttlMS: 60000,
			layout: "unknown", confidence: inspect.Guess, shape: inspect.ShapeUUID,
			owner: "3b1f5e7a-2c4d-4e6f-8a9b-0c1d2e3f4a5b", findings: ""},
		{name: "node-redlock v5 value shaped like a uuid1",
			source: "redlock 5.0.0-beta.2 dist/cjs/index.js _random(): randomBytes(16).toString(\"hex\"); 1 in 64 looks like uuid1 (this one dates 3079-01-14)",
			key:    "fx-redlock5", value: "c49249807d05168d9a3c5e0f1d2c3b4a", pttlMS: 10000,
			layout: "unknown", confidence: inspect.Guess, shape: inspect.ShapeHexToken,
			owner: "c49249807d05168d9a3c5e0f1d2c3b4a", findings: "",
			check: func(t *testing.T, l inspect.Lock) {
				if l.Holder != nil {
					t.Errorf("holder %+v: no acquisition time outside now ± 1 day", l.Holder)
				}
			}},
		{name: "node-redlock v4",
			source: "redlock 4.2.0 redlock.js _random(): randomBytes(16).toString('hex'), SET PX",
			key:    "fx-redlock4", value: "5f2b8c1d9e3a4b6c7d8e9f0a1b2c3d4e", pttlMS: 10000,
			layout: "unknown", confidence: inspect.Guess, shape: inspect.ShapeHexToken, owner: "5f2b8c1d9e3a4b6c7d8e9f0a1b2c3d4e", findings: ""},
		{name: "redis-py now",
			source: "redis-py v4.3.4 (Debian python3-redis) redis/lock.py: token uuid.uuid1().hex, SET NX PX",
			key:    "fx-redispy", value: uuid1Hex(time.Now()), pttlMS: 10000,
			layout: "redis-py", confidence: inspect.Likely, findings: "NO_FENCE:warning",
			check: func(t *testing.T, l inspect.Lock) {
				if l.Holder == nil || l.Holder.AcquiredAt == "" {
					t.Errorf("holder %+v, want the uuid1 time", l.Holder)
				}
			}},
		{name: "redis-lock (npm)",
			source: "redis-lock 1.0.0 index.js: key lock.<name>, value Date.now()+timeout+1, SET PX 5000 NX",
			key:    "lock.fx-report", value: strconv.FormatInt(nowMS+5001, 10), pttlMS: 5000,
			layout: "node-redis-lock", confidence: inspect.Likely, findings: "NO_FENCE:warning",
			check: func(t *testing.T, l inspect.Lock) {
				if l.Holder == nil || l.Holder.ValueExpiresAt != time.UnixMilli(nowMS+5001).UTC().Format("2006-01-02T15:04:05.000Z") {
					t.Errorf("holder %+v", l.Holder)
				}
			}},
		{name: "rueidislock",
			source: "rueidis v1.0.80 rueidislock/lock.go: keys rueidislock:<i>:<name>, 24 random bytes, SET NX PXAT now+5s",
			key:    "rueidislock:0:fx-report", value: string([]byte{0x9c, 0x01, 0xfe, 0x33, 0x80, 0x7f, 0x12, 0xaa, 0x00, 0x41, 0xc3, 0x28, 0x5e, 0xe1, 0x90, 0x07, 0x66, 0xd2, 0x0b, 0xb4, 0x71, 0x8f, 0x3a, 0xcd}),
			pttlMS: 5000, layout: "rueidislock", confidence: inspect.Likely, findings: "BINARY_VALUE:info,NO_FENCE:warning"},
		{name: "microi ULID owner",
			source: "the seed platform (Microi): <fence>:<ULID owner>, counter at the sibling :FencingToken; values from issue 20",
			key:    "Microi:{os}:DatabaseBackup:Lease", value: "42:01JD8ZQ3V7K2M9XW4T6R5B1C0N", pttlMS: 30000,
			counters: map[string]int64{"Microi:{os}:DatabaseBackup:FencingToken": 42},
			layout:   "microi", confidence: inspect.Certain, owner: "01JD8ZQ3V7K2M9XW4T6R5B1C0N", findings: "",
			check: func(t *testing.T, l inspect.Lock) {
				if l.Fence == nil || *l.Fence.Value != 42 || l.Fence.Counter == nil || *l.Fence.Counter != 42 || l.Fence.CounterKey != "Microi:{os}:DatabaseBackup:FencingToken" {
					t.Errorf("fence %+v", l.Fence)
				}
			}},
		{name: "microi GUID owner",
			source: "the seed platform (Microi): <fence>:<32-hex GUID owner>, counter at the sibling :FencingToken",
			key:    "Microi:{os}:FxGuid:Lease", value: "43:9f1c2d3e4b5a69788796a5b4c3d2e1f0", pttlMS: 30000,
			counters: map[string]int64{"Microi:{os}:FxGuid:FencingToken": 43},
			layout:   "microi", confidence: inspect.Certain, owner: "9f1c2d3e4b5a69788796a5b4c3d2e1f0", findings: ""},
		{name: "microi counter met on its own",
			source: "the seed platform (Microi): the INCR counter, no TTL by design",
			key:    "Microi:{os}:FxCounter:FencingToken", value: "42",
			layout: "microi", confidence: inspect.Certain, findings: "",
			check: func(t *testing.T, l inspect.Lock) {
				if l.Role != inspect.RoleFence {
					t.Errorf("role %q", l.Role)
				}
			}},
		{name: "counter at a fixed fence key",
			source: "lockctl --fence-template 'Microi:{{os}}:FxFixed:Counter' (a fixed key)",
			key:    "Microi:{os}:FxFixed:Counter", value: "1",
			opts:   inspect.Options{IsFenceKey: func(k string) bool { return k == "Microi:{os}:FxFixed:Counter" }},
			layout: "lockctl", confidence: inspect.Certain, findings: ""},
		{name: "634-year TTL",
			source: "a Go time.Duration (20s = 2e10 ns) passed as seconds: EXPIRE 20000000000",
			key:    "fx-ns-as-s", value: "IO/ELiJbxyZ/yOXW310MYA==", pttlMS: 20_000_000_000_000,
			layout: "unknown", confidence: inspect.Guess, shape: inspect.ShapeBase64Token, findings: "TTL_UNIT_MIXUP:error",
			check: func(t *testing.T, l inspect.Lock) {
				if got := inspect.FormatTTL(l.PTTLMS); !strings.HasPrefix(got, "634y ") {
					t.Errorf("FormatTTL(%d) = %q", l.PTTLMS, got)
				}
				if m := l.Findings[0].Message; !strings.Contains(m, "634y") || !strings.Contains(m, "20s") {
					t.Errorf("message %q", m)
				}
			}},
		{name: "shedlock",
			source: "ShedLock shedlock-parent-7.9.0 providers/redis/shedlock-support-redis/.../InternalRedisLockProvider.java: ADDED:<iso>@<host>:<uuid>",
			key:    "job-lock:default:fx-report", value: "ADDED:2026-12-02T00:00:00.006Z@worker-2:1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f", pttlMS: 60000,
			layout: "shedlock", confidence: inspect.Certain, findings: "NO_FENCE:warning",
			check: func(t *testing.T, l inspect.Lock) {
				if l.Holder.Host != "worker-2" || l.Holder.ClientID != "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f" {
					t.Errorf("holder %+v", l.Holder)
				}
			}},
		{name: "DistributedLock.Redis",
			source: "DistributedLock tag 2.8.1 src/DistributedLock.Redis/RedLock/RedLockHelper.cs CreateLockId: <MachineName>_<pid>_<Guid n>",
			key:    "fx-dl", value: "web-01_4242_9f1c2d3e4b5a69788796a5b4c3d2e1f0", pttlMS: 30000,
			layout: "distributedlock", confidence: inspect.Certain, findings: "NO_FENCE:warning"},
	}
}

// TestFixtures writes each fixture on a real Redis as the library does and
// reads it back: layout, confidence, candidates, owner and the exact findings.
func TestFixtures(t *testing.T) {
	c := client(t)
	for _, fx := range fixtures() {
		t.Run(fx.name, func(t *testing.T) {
			for k, n := range fx.counters {
				must(t, c.Set(ctx, k, n, 0).Err())
			}
			for _, k := range fx.lists {
				must(t, c.RPush(ctx, k, 1).Err())
				must(t, c.PExpire(ctx, k, time.Minute).Err())
			}
			args := []any{"set", fx.key, fx.value}
			if fx.pttlMS > 0 { // PX in ms as sent: a time.Duration cannot hold 634 years
				args = append(args, "px", fx.pttlMS)
			}
			must(t, c.Do(ctx, args...).Err())
			r := &inspect.Reader{Options: fx.opts}
			if !fx.readAt.IsZero() {
				r.Now = func() time.Time { return fx.readAt }
			}
			locks, err := r.Read(ctx, c, []string{fx.key})
			must(t, err)
			l := locks[0]
			t.Logf("source: %s", fx.source)
			if l.Layout.Name != fx.layout || l.Layout.Confidence != fx.confidence || !reflect.DeepEqual(l.Layout.Candidates, fx.candidates) || l.Layout.Shape != fx.shape {
				t.Errorf("layout %+v, want %s (%s) candidates %v shape %q", l.Layout, fx.layout, fx.confidence, fx.candidates, fx.shape)
			}
			if fx.owner != "" && l.Owner != fx.owner {
				t.Errorf("owner %q, want %q (never cut)", l.Owner, fx.owner)
			}
			if got := codes(l); got != fx.findings {
				t.Errorf("findings %s, want %s: %+v", got, fx.findings, l.Findings)
			}
			if fx.check != nil {
				fx.check(t, l)
			}
		})
	}
}

// TestSiblingProbeRefused: an ACL scoped to the lock and lockctl's default
// counter refuses the seed platform's sibling; that probe then counts as
// absent (NO_FENCE), not as a read error that stops the inspect.
func TestSiblingProbeRefused(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	admin := s.Client(t)
	must(t, admin.Set(ctx, "App:{x}:Job:Lease", "5:9f1c2d3e4b5a69788796a5b4c3d2e1f0", time.Minute).Err())
	must(t, admin.Set(ctx, "App:{x}:Job:FencingToken", 5, 0).Err())
	must(t, admin.Do(ctx, "acl", "setuser", "scoped", "on", ">scoped-pass", "~*:Lease", "~*:fence", "+@read", "+@connection").Err())
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "scoped", Password: "scoped-pass"})
	t.Cleanup(func() { _ = c.Close() })
	l := readOne(t, c, "App:{x}:Job:Lease", inspect.Options{})
	if l.Layout.Name != "lockctl" || !hasFinding(l, inspect.FindingNoFence) {
		t.Errorf("layout %+v findings %s", l.Layout, codes(l))
	}
}
