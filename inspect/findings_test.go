package inspect_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/redis/go-redis/v9"
)

func codes(l inspect.Lock) string {
	var out []string
	for _, f := range l.Findings {
		out = append(out, f.Code+":"+string(f.Severity))
	}
	return strings.Join(out, ",")
}

// TestFindings triggers every finding code on a real Redis.
func TestFindings(t *testing.T) {
	c := client(t)
	p := "t:" + redistest.Name(t) + ":"
	lockctlValue := func(fence int64) string { return lockcore.FormatValue(fence, lockcore.NewOwnerToken()) }
	cases := []struct {
		name  string
		setup func() string
		opts  inspect.Options
		want  string
	}{
		{"NO_TTL", func() string {
			k := p + "nottl"
			must(t, c.Set(ctx, k, lockctlValue(3), 0).Err())
			must(t, c.Set(ctx, lockcore.FenceKeyFor(k), 3, 0).Err())
			return k
		}, inspect.Options{}, "NO_TTL:error"},
		{"CONSTANT_OWNER", func() string {
			must(t, c.Set(ctx, p+"const", "locked", 20*time.Second).Err())
			return p + "const"
		}, inspect.Options{}, "CONSTANT_OWNER:warning"},
		{"NOT_A_LOCK", func() string {
			must(t, c.Set(ctx, p+"data", `{"order":"order-demo-001","total":42}`, 0).Err())
			return p + "data"
		}, inspect.Options{}, "NO_TTL:error,NOT_A_LOCK:warning"},
		{"LEASE_OVER_CAP", func() string {
			must(t, c.Set(ctx, "rs:"+p+"long", "q2hZ3k0FzA8sV1xY7bN4Ag==", 5*time.Minute).Err())
			return "rs:" + p + "long"
		}, inspect.Options{LeaseCap: time.Minute}, "LEASE_OVER_CAP:warning"},
		{"SUBSECOND_LEASE", func() string {
			must(t, c.Set(ctx, "rs:"+p+"short", "q2hZ3k0FzA8sV1xY7bN4Ag==", 900*time.Millisecond).Err())
			return "rs:" + p + "short"
		}, inspect.Options{}, "SUBSECOND_LEASE:warning"},
		{"NO_FENCE", func() string {
			k := p + "nofence"
			must(t, c.Set(ctx, k, lockctlValue(9), 20*time.Second).Err())
			return k
		}, inspect.Options{}, "NO_FENCE:warning"},
		{"FENCE_MISMATCH", func() string {
			k := p + "mismatch"
			must(t, c.Set(ctx, k, lockctlValue(34), 20*time.Second).Err())
			must(t, c.Set(ctx, lockcore.FenceKeyFor(k), 35, 0).Err())
			return k
		}, inspect.Options{}, "FENCE_MISMATCH:error"},
		{"FENCE_MISMATCH_backwards", func() string {
			k := p + "backwards"
			must(t, c.Set(ctx, k, lockctlValue(34), 20*time.Second).Err())
			must(t, c.Set(ctx, lockcore.FenceKeyFor(k), 2, 0).Err())
			return k
		}, inspect.Options{}, "FENCE_MISMATCH:error"},
		{"CROSS_SLOT_cluster", func() string {
			must(t, c.Set(ctx, "lock:"+p+"resource", "UuD4gq/mCzUjken8FHe/uSWP", 20*time.Second).Err())
			must(t, c.RPush(ctx, "lock-signal:"+p+"resource", 1).Err())
			return "lock:" + p + "resource"
		}, inspect.Options{Cluster: true}, "NO_FENCE:warning,CROSS_SLOT:error"},
		{"BINARY_VALUE", func() string {
			must(t, c.Set(ctx, "lock:"+p+"bin", string([]byte{0xff, 0xfe, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x80}), 20*time.Second).Err())
			return "lock:" + p + "bin"
		}, inspect.Options{}, "BINARY_VALUE:info"},
		{"WRONG_TYPE", func() string {
			must(t, c.RPush(ctx, p+"list", "a", "b").Err())
			return p + "list"
		}, inspect.Options{}, "WRONG_TYPE:info,NO_TTL:info"},
		{"WRONG_TYPE_hash", func() string {
			must(t, c.HSet(ctx, p+"hash", "name", "alice").Err())
			must(t, c.Expire(ctx, p+"hash", time.Minute).Err())
			return p + "hash"
		}, inspect.Options{}, ""}, // a hash of fields no layout explains: described, no finding
		{"ABSENT", func() string { return p + "absent" }, inspect.Options{}, "ABSENT:info"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := readOne(t, c, tc.setup(), tc.opts)
			if got := codes(l); got != tc.want {
				t.Errorf("findings = %s, want %s\n%+v", got, tc.want, l.Findings)
			}
			for _, f := range l.Findings {
				if f.Message == "" || f.Reason == "" {
					t.Errorf("finding %s lacks a message or reason", f.Code)
				}
			}
		})
	}
}

// Case 1 (shared/cases.md): SETNX then EXPIRE, crash in between.
func TestCase1SetnxWithoutExpire(t *testing.T) {
	c := client(t)
	k := "horizon:lock:x:" + redistest.Name(t)
	must(t, c.SetNX(ctx, k, "1", 0).Err())
	l := readOne(t, c, k, inspect.Options{})
	if l.PTTLMS != -1 || findingSeverity(l, inspect.FindingNoTTL) != inspect.SeverityError || !hasFinding(l, inspect.FindingConstantOwner) {
		t.Errorf("pttl %d findings %s, want NO_TTL (error) and CONSTANT_OWNER", l.PTTLMS, codes(l))
	}
}

// Case 4: extend adds instead of sets: after renewal n PTTL is 10000+2000n.
func TestCase4ExtendAdds(t *testing.T) {
	c := client(t)
	k := "lock:" + redistest.Name(t)
	must(t, c.Set(ctx, k, lockcore.FormatValue(1, lockcore.NewOwnerToken()), 10*time.Second).Err())
	must(t, c.Set(ctx, lockcore.FenceKeyFor(k), 1, 0).Err())
	for n := int64(1); n <= 450; n++ { // every 8 s the holder adds 10 s to the 2 s left
		must(t, c.PExpire(ctx, k, time.Duration(10000+2000*n)*time.Millisecond).Err())
	}
	l := readOne(t, c, k, inspect.Options{LeaseCap: time.Minute})
	if l.PTTLMS < 900000 || !hasFinding(l, inspect.FindingLeaseOverCap) {
		t.Errorf("pttl %d findings %s, want ~910000 and LEASE_OVER_CAP", l.PTTLMS, codes(l))
	}
}

// Case 5: Redisson renewal that outlives its holder (inspect part; the
// watch part is in watch_test.go).
func TestCase5Redisson(t *testing.T) {
	c := client(t)
	k := "concurrent-test2:" + redistest.Name(t)
	must(t, c.HIncrBy(ctx, k, "ea0fb3b6-09e2-4393-9e82-3b822e5e76c3:1", 1).Err())
	must(t, c.PExpire(ctx, k, 30*time.Second).Err())
	l := readOne(t, c, k, inspect.Options{})
	if l.Layout.Name != "redisson" || *l.HoldCount != 1 || l.Holder.ClientID != "ea0fb3b6-09e2-4393-9e82-3b822e5e76c3" || l.Holder.Thread != "1" {
		t.Errorf("layout %v hold %v holder %+v", l.Layout, l.HoldCount, l.Holder)
	}
}

// Case 8: token compared as text vs bytes: raw bytes decide.
func TestCase8TokenBytes(t *testing.T) {
	c := client(t)
	k := "lock:x:" + redistest.Name(t)
	token := lockcore.NewOwnerToken()
	must(t, c.Set(ctx, k, token, 30*time.Second).Err())
	asText := readOne(t, c, k, inspect.Options{ExpectOwner: []byte(token)})
	if asText.OwnerCheck != "OWNED" || asText.Owner != token || asText.OwnerHex != hex.EncodeToString([]byte(token)) {
		t.Errorf("text token: %s owner %q hex %q", asText.OwnerCheck, asText.Owner, asText.OwnerHex)
	}
	decoded, _ := hex.DecodeString(token)
	asBytes := readOne(t, c, k, inspect.Options{ExpectOwner: decoded})
	if asBytes.OwnerCheck != "NOT_OWNED" {
		t.Errorf("the 16 decoded bytes are not the stored 32 characters: got %s", asBytes.OwnerCheck)
	}
	if hasFinding(asText, inspect.FindingBinaryValue) {
		t.Error("32 hex characters are text")
	}
	// An absent key is held by nobody, so not by that owner either: a
	// script that trusts exit 0 of inspect --owner must not get it then.
	must(t, c.Del(ctx, k).Err())
	if gone := readOne(t, c, k, inspect.Options{ExpectOwner: []byte(token)}); gone.OwnerCheck != "NOT_OWNED" {
		t.Errorf("absent key: owner check %q, want NOT_OWNED", gone.OwnerCheck)
	}
}

// --owner takes the owner token or the whole value, as unlock --owner does:
// "41:<token>" held by <token> is OWNED either way, and no part of it else.
func TestExpectOwnerWholeValue(t *testing.T) {
	c := client(t)
	k := "lock:OrderId:" + redistest.Name(t)
	token := lockcore.NewOwnerToken()
	must(t, c.Set(ctx, k, "41:"+token, 30*time.Second).Err())
	for expect, want := range map[string]string{token: "OWNED", "41:" + token: "OWNED", "41": "NOT_OWNED", "41:": "NOT_OWNED", "42:" + token: "NOT_OWNED"} {
		if l := readOne(t, c, k, inspect.Options{ExpectOwner: []byte(expect)}); l.OwnerCheck != want {
			t.Errorf("--owner %q: %s, want %s", expect, l.OwnerCheck, want)
		}
	}
}

// Case 9: cluster hash slots, CRC16 and the first-{ rule.
func TestCase9CrossSlot(t *testing.T) {
	slots := map[string]int{
		"lock:resource": 3196, "lock-signal:resource": 835, "lock:{resource}": 10348, "lock-signal:{resource}": 10348,
		"{lock}resource": 8718, "{lock-signal}resource": 11570, "{Test}:mam8CQJFrTYBEXbcsVKVNA:key": 11336,
		"redisson_rwlock__{{Test}:mam8CQJFrTYBEXbcsVKVNA:key}": 7473,
		"lock:OrderId:order-demo-001":                          823, "lock:OrderId:order-demo-001:fence": 8074,
	}
	for k, want := range slots {
		if got := lockcore.Slot(k); got != want {
			t.Errorf("Slot(%q) = %d, want %d", k, got, want)
		}
	}
	c := client(t)
	// python-redis-lock's lock and signal keys without a hash tag: the
	// signal exists after a release (only existing companions count).
	must(t, c.Set(ctx, "lock:resource", "UuD4gq/mCzUjken8FHe/uSWP", 20*time.Second).Err())
	must(t, c.RPush(ctx, "lock-signal:resource", 1).Err())
	l := readOne(t, c, "lock:resource", inspect.Options{})
	if !hasFinding(l, inspect.FindingCrossSlot) || !strings.Contains(l.Findings[len(l.Findings)-1].Message, "slot 3196") {
		t.Errorf("lock:resource: %s %v", codes(l), l.Findings)
	}
	must(t, c.Set(ctx, "lock:{resource}", "UuD4gq/mCzUjken8FHe/uSWP", 20*time.Second).Err())
	must(t, c.RPush(ctx, "lock-signal:{resource}", 1).Err())
	if l := readOne(t, c, "lock:{resource}", inspect.Options{}); hasFinding(l, inspect.FindingCrossSlot) {
		t.Errorf("lock:{resource} shares slot 10348 with its signal: %s", codes(l))
	}
	// A lockctl fence template that leaves the fence on another slot.
	ks, err := lockcore.NewKeySpec("OrderId", "", "{key}:fence", false)
	must(t, err)
	keys := ks.Keys("order-demo-001")
	must(t, c.Set(ctx, keys.Lock, lockcore.FormatValue(5, lockcore.NewOwnerToken()), 20*time.Second).Err())
	must(t, c.Set(ctx, keys.Fence, 5, 0).Err())
	l = readOne(t, c, keys.Lock, inspect.Options{FenceKey: func(string) string { return keys.Fence }})
	if codes(l) != "CROSS_SLOT:warning" || !strings.Contains(l.Findings[0].Message, "slot 823") || !strings.Contains(l.Findings[0].Message, "slot 8074") {
		t.Errorf("lockctl with {key}:fence: %v", l.Findings)
	}
}

// Case 10: milliseconds given as seconds: a 120 ms lease.
func TestCase10SubsecondLease(t *testing.T) {
	c := client(t)
	k := "cron:" + redistest.Name(t)
	must(t, c.Set(ctx, k, lockcore.NewOwnerToken(), 120*time.Millisecond).Err())
	l := readOne(t, c, k, inspect.Options{})
	if !hasFinding(l, inspect.FindingSubsecondLease) {
		t.Errorf("findings %s, want SUBSECOND_LEASE", codes(l))
	}
}

// Case 11: data written into the lock key.
func TestCase11DataInLockKey(t *testing.T) {
	c := client(t)
	k := "resource:" + redistest.Name(t)
	must(t, c.Set(ctx, k, "testNewValue", 0).Err())
	l := readOne(t, c, k, inspect.Options{ExpectOwner: []byte("HOST-01")})
	if codes(l) != "NO_TTL:error,NOT_A_LOCK:warning" || l.OwnerCheck != "NOT_OWNED" {
		t.Errorf("findings %s owner check %s, want NOT_A_LOCK + NO_TTL, NOT_OWNED", codes(l), l.OwnerCheck)
	}
}

// A 10 MB value is read in part, flagged, and does not panic.
func TestHugeValueTruncated(t *testing.T) {
	c := client(t)
	k := "t:" + redistest.Name(t)
	must(t, c.Set(ctx, k, bytes.Repeat([]byte("x"), 10<<20), time.Minute).Err())
	l := readOne(t, c, k, inspect.Options{})
	if !l.Truncated || l.ValueBytes != 10<<20 || len(l.Owner) > 256 {
		t.Errorf("truncated %v size %d owner %d bytes", l.Truncated, l.ValueBytes, len(l.Owner))
	}
}

// Non-UTF-8 values are shown as hex with BINARY_VALUE, and a non-UTF-8 key
// gets its hex in key_hex.
func TestNonUTF8(t *testing.T) {
	c := client(t)
	k := "t:\xff" + redistest.Name(t)
	must(t, c.Set(ctx, k, "\xc3\x28\xa0\xa1", time.Minute).Err())
	l := readOne(t, c, k, inspect.Options{})
	if l.Owner != "" || l.OwnerHex != "c328a0a1" || !hasFinding(l, inspect.FindingBinaryValue) {
		t.Errorf("owner %q hex %q findings %s", l.Owner, l.OwnerHex, codes(l))
	}
	if l.KeyHex != hex.EncodeToString([]byte(k)) {
		t.Errorf("key %q: key_hex %q", k, l.KeyHex)
	}
}

// Companion keys met by a scan are named, not reported as broken locks.
func TestCompanionKeys(t *testing.T) {
	c := client(t)
	fence := "{lock:" + redistest.Name(t) + "}:fence"
	must(t, c.Set(ctx, fence, 12, 0).Err())
	l := readOne(t, c, fence, inspect.Options{})
	if l.Role != inspect.RoleFence || l.Layout.Name != "lockctl" || len(l.Findings) != 0 {
		t.Errorf("fence counter: role %q layout %v findings %s", l.Role, l.Layout, codes(l))
	}
	must(t, c.RPush(ctx, "lock-signal:"+redistest.Name(t), 1).Err())
	if l := readOne(t, c, "lock-signal:"+redistest.Name(t), inspect.Options{}); l.Role != inspect.RoleSignal || len(l.Findings) != 0 {
		t.Errorf("signal list: role %q findings %s", l.Role, codes(l))
	}
}

// INCR stops at 2^63−1, so a longer fence in a lockctl value was never
// issued: FENCE_MISMATCH names it, and no token is shown. ParseInt used to
// clamp a 19-digit one to 9223372036854775807, and a 20-digit one was not
// taken for a lockctl value at all.
func TestFenceOverflow(t *testing.T) {
	c := client(t)
	for _, fence := range []string{"9223372036854775808", "18446744073709551616"} {
		k := "t:" + redistest.Name(t) + ":" + fence
		must(t, c.Set(ctx, k, fence+":"+lockcore.NewOwnerToken(), 20*time.Second).Err())
		must(t, c.Set(ctx, lockcore.FenceKeyFor(k), 2, 0).Err())
		l := readOne(t, c, k, inspect.Options{})
		if codes(l) != "FENCE_MISMATCH:error" || !strings.Contains(l.Findings[0].Message, fence) || l.Layout.Name != "lockctl" ||
			l.Fence == nil || l.Fence.Value != nil || l.Fence.Counter == nil || *l.Fence.Counter != 2 {
			t.Errorf("fence %s: layout %v, fence %+v, findings %+v", fence, l.Layout, l.Fence, l.Findings)
		}
	}
}

// A fence counter INCR refuses (" 5", "+5", "05": strconv takes them, Redis
// does not; 2^63−1: INCR would overflow) makes the next acquire fail, so
// it is FENCE_MISMATCH even when it reads as the holder's fence. It was
// shown as the counter 5 (or 2^63−1) with no finding.
func TestFenceCounterIncrRefuses(t *testing.T) {
	c := client(t)
	owner := lockcore.NewOwnerToken()
	for i, tc := range []struct {
		fence   int64
		counter string
	}{{5, " 5"}, {5, "+5"}, {5, "05"}, {5, "5\n"}, {math.MaxInt64, "9223372036854775807"}} {
		k := fmt.Sprintf("t:%s:%d", redistest.Name(t), i)
		must(t, c.Set(ctx, k, lockcore.FormatValue(tc.fence, owner), 20*time.Second).Err())
		must(t, c.Set(ctx, lockcore.FenceKeyFor(k), tc.counter, 0).Err())
		// The claim the finding makes: an acquire on this counter fails.
		var fe *lockcore.FenceCounterError
		if _, err := lockcore.NewLocker(c).Acquire(ctx, lockcore.Keys{Lock: k + ":other", Fence: lockcore.FenceKeyFor(k)}, time.Second); !errors.As(err, &fe) {
			t.Fatalf("counter %q: acquire gave %v, want a FenceCounterError", tc.counter, err)
		}
		l := readOne(t, c, k, inspect.Options{})
		if codes(l) != "FENCE_MISMATCH:error" || !strings.Contains(l.Findings[0].Message, "the next acquire fails") {
			t.Errorf("counter %q: fence %+v, findings %+v", tc.counter, l.Fence, l.Findings)
		}
	}
	// A counter INCR can raise, equal to the holder's fence: no finding.
	k := "t:" + redistest.Name(t) + ":ok"
	must(t, c.Set(ctx, k, lockcore.FormatValue(math.MaxInt64-1, owner), 20*time.Second).Err())
	must(t, c.Set(ctx, lockcore.FenceKeyFor(k), math.MaxInt64-1, 0).Err())
	if l := readOne(t, c, k, inspect.Options{}); codes(l) != "" || l.Fence.Counter == nil || *l.Fence.Counter != math.MaxInt64-1 {
		t.Errorf("counter 2^63−2: fence %+v, findings %+v", l.Fence, l.Findings)
	}
}

// reacquireHook runs acquire (a new holder taking the key) just before the
// reader's second round trip, which opens with the fence counter's TYPE.
type reacquireHook struct {
	acquire func()
	done    bool
}

func (h *reacquireHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *reacquireHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *reacquireHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if args := cmds[0].Args(); !h.done && cmds[0].Name() == "type" && len(args) == 2 && strings.HasSuffix(fmt.Sprint(args[1]), ":fence") {
			h.done = true
			h.acquire()
		}
		return next(ctx, cmds)
	}
}

// A lock released and acquired again between the two round trips: the
// counter read in the second is the new holder's fence, one above the
// value read in the first. That is no FENCE_MISMATCH ("a later acquire
// issued a newer token" was reported for a lock taken every few ms, in
// up to every key of a scan); a counter above a value that did not change
// still is.
func TestFenceReacquiredBetweenReads(t *testing.T) {
	s := redistest.Shared(t)
	admin := s.Client(t)
	for _, reacquire := range []bool{true, false} {
		for _, light := range []bool{false, true} {
			k := fmt.Sprintf("t:%s:%v:%v", redistest.Name(t), reacquire, light)
			keys := lockcore.Keys{Lock: k, Fence: lockcore.FenceKeyFor(k)}
			l, err := lockcore.NewLocker(admin).Acquire(ctx, keys, 20*time.Second)
			must(t, err)
			c := redis.NewClient(&redis.Options{Addr: s.Addr})
			c.AddHook(&reacquireHook{acquire: func() {
				if !reacquire { // a stale holder's value under a newer counter
					must(t, admin.Incr(ctx, keys.Fence).Err())
					return
				}
				must(t, l.Release(ctx))
				_, err := lockcore.NewLocker(admin).Acquire(ctx, keys, 20*time.Second)
				must(t, err)
			}})
			locks, err := (&inspect.Reader{Light: light}).Read(ctx, c, []string{k})
			_ = c.Close()
			must(t, err)
			got, want := codes(locks[0]), ""
			if !reacquire {
				want = "FENCE_MISMATCH:error"
			}
			if got != want || locks[0].Layout.Name != "lockctl" {
				t.Errorf("reacquired %v, light %v: layout %s, findings %s, want %q", reacquire, light, locks[0].Layout.Name, got, want)
			}
		}
	}
}

// A lock whose fence counter was lost in an empty restart (SHUTDOWN NOSAVE,
// no persistence) and started again at the server's TIME in µs by the next
// acquire (lockcore/scripts/acquire.lua) is an ordinary lockctl lock: the
// 16-digit fence equals the counter, no FENCE_MISMATCH or other error; the
// next holder's fence is the counter's next value.
func TestFenceFromTimeAfterRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	k := "lock:OrderId:order-demo-001"
	keys := lockcore.Keys{Lock: k, Fence: lockcore.FenceKeyFor(k)}
	lk := lockcore.NewLocker(c)
	before, err := lk.Acquire(ctx, keys, 20*time.Second)
	must(t, err)
	srv.Restart(t)
	prev := int64(0)
	for i := range 2 {
		l, err := lk.Acquire(ctx, keys, 20*time.Second)
		must(t, err)
		if l.Fence <= before.Fence || prev != 0 && l.Fence != prev+1 {
			t.Errorf("fence %d after the restart; before it %d, previous %d", l.Fence, before.Fence, prev)
		}
		prev = l.Fence
		got := readOne(t, c, k, inspect.Options{})
		if codes(got) != "" || got.Layout.Name != "lockctl" || got.Fence == nil || got.Fence.Value == nil || got.Fence.Counter == nil ||
			*got.Fence.Value != l.Fence || *got.Fence.Counter != l.Fence {
			t.Errorf("acquire %d after the restart (fence %d): layout %v, fence %+v, findings %+v", i+1, l.Fence, got.Layout, got.Fence, got.Findings)
		}
		must(t, l.Release(ctx))
	}
}

// TestSubsecondOnlyWhenSet: a healthy lease near its end (node-redlock 5
// using(): 10 s, extended when 500 ms remain) was set long ago (idle ≥ 1 s)
// and is no SUBSECOND_LEASE; the same PTTL on a key just written is.
func TestSubsecondOnlyWhenSet(t *testing.T) {
	t.Parallel()
	c := client(t)
	k := "t:" + redistest.Name(t) + ":healthy"
	must(t, c.Set(ctx, k, "5f2b8c1d9e3a4b6c7d8e9f0a1b2c3d4e", 3*time.Second).Err())
	time.Sleep(2200 * time.Millisecond) // nothing touches the key, as between redlock's extensions
	l := readOne(t, c, k, inspect.Options{})
	if l.PTTLMS >= 1000 || l.IdleSeconds == nil || *l.IdleSeconds < 1 || hasFinding(l, inspect.FindingSubsecondLease) {
		t.Errorf("pttl %d idle %v findings %s: a lease set at 3s is healthy near its end", l.PTTLMS, l.IdleSeconds, codes(l))
	}
	// OBJECT IDLETIME counts whole seconds of Redis's LRU clock, which
	// serverCron advances: a read a few ms after the SET still says idle 1
	// when that clock crossed a second in between. The rule holds for a
	// read at idle 0, so a read at idle 1 sets the key again (a few times).
	fresh := "t:" + redistest.Name(t) + ":fresh"
	for try := 1; ; try++ {
		must(t, c.Set(ctx, fresh, "5f2b8c1d9e3a4b6c7d8e9f0a1b2c3d4e", time.Duration(l.PTTLMS)*time.Millisecond).Err())
		got := readOne(t, c, fresh, inspect.Options{})
		if got.IdleSeconds != nil && *got.IdleSeconds == 0 {
			if !hasFinding(got, inspect.FindingSubsecondLease) {
				t.Errorf("a key just set with %dms, idle 0: findings %s, want SUBSECOND_LEASE", got.PTTLMS, codes(got))
			}
			return
		}
		if try == 5 {
			t.Fatalf("a key just set: idle %v in 5 tries, never 0", got.IdleSeconds)
		}
	}
}
