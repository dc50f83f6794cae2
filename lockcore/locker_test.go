package lockcore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

func testKeys(t *testing.T) Keys {
	ks, err := NewKeySpec("OrderId", "t:"+redistest.Name(t)+":{value}", "", false)
	if err != nil {
		t.Fatal(err)
	}
	return ks.Keys("order-demo-001")
}

func TestAcquireRenewRelease(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Shared(t).Client(t)
	keys := testKeys(t)
	lk := NewLocker(rdb)

	a, err := lk.Acquire(ctx, keys, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := rdb.Get(ctx, keys.Lock).Result()
	if v != a.Value() || !strings.HasPrefix(v, strconv.FormatInt(a.Fence, 10)+":") || len(a.Owner) != 32 {
		t.Fatalf("value %q, lock %+v", v, a)
	}
	pttl := rdb.PTTL(ctx, keys.Lock).Val()
	if pttl <= 9*time.Second || pttl > 10*time.Second {
		t.Errorf("PTTL %s, want about 10s", pttl)
	}

	_, err = lk.Acquire(ctx, keys, 10*time.Second)
	var held *HeldError
	if !errors.Is(err, ErrNotObtained) || !errors.As(err, &held) || held.Value != a.Value() || held.PTTL <= 0 {
		t.Fatalf("second acquire: %v", err)
	}
	if f, _ := rdb.Get(ctx, keys.Fence).Int64(); f != a.Fence {
		t.Errorf("a refused acquire moved the fence counter from %d to %d", a.Fence, f)
	}

	// Renew sets the TTL back to the full lease, never adds (cases.md 4).
	rdb.PExpire(ctx, keys.Lock, 2*time.Second)
	if err := a.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_ = a.Renew(ctx)
	}
	if p := rdb.PTTL(ctx, keys.Lock).Val(); p > 10*time.Second || p < 9*time.Second {
		t.Errorf("after renewals PTTL %s, want ≤ the 10s lease", p)
	}

	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, keys.Lock).Val() != 0 {
		t.Error("release left the key")
	}
	if rdb.Exists(ctx, keys.Fence).Val() != 1 {
		t.Error("release touched the fence counter")
	}
	if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Errorf("second release: %v", err)
	}
	// Renew never re-creates a missing key.
	if err := a.Renew(ctx); !errors.Is(err, ErrNotHeld) || rdb.Exists(ctx, keys.Lock).Val() != 0 {
		t.Errorf("renew of a released lock: %v", err)
	}

	b, err := lk.Acquire(ctx, keys, time.Second)
	if err != nil || b.Fence != a.Fence+1 {
		t.Fatalf("next acquire: %+v %v, want fence %d", b, err, a.Fence+1)
	}
}

// serverMicros is the server's TIME in microseconds since the epoch.
func serverMicros(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now.UnixMicro()
}

// A missing fence counter starts at the server's TIME in microseconds: a
// positive int64 under 2^53 (exact in Lua's doubles, written exactly in
// the value) and over 2^31 (a 32-bit column cannot hold it, docs/fencing.md).
// A counter that exists, even at 0, goes up by exactly 1 per acquire.
func TestFenceCounterStart(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Shared(t).Client(t)
	keys := testKeys(t)
	lk := NewLocker(rdb)
	before := serverMicros(t, rdb)
	a, err := lk.Acquire(ctx, keys, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	after := serverMicros(t, rdb)
	if a.Fence < before || a.Fence > after || a.Fence >= 1<<53 || a.Fence <= math.MaxInt32 {
		t.Errorf("new counter's fence %d, want the server's TIME in µs, between %d and %d", a.Fence, before, after)
	}
	if v, c := rdb.Get(ctx, keys.Lock).Val(), rdb.Get(ctx, keys.Fence).Val(); v != fmt.Sprintf("%d:%s", a.Fence, a.Owner) || c != strconv.FormatInt(a.Fence, 10) {
		t.Errorf("lock value %q, counter %q for fence %d", v, c, a.Fence)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, start := range []int64{0, 41, a.Fence} {
		rdb.Set(ctx, keys.Fence, start, 0)
		for i := range int64(3) {
			l, err := lk.Acquire(ctx, keys, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if want := start + i + 1; l.Fence != want || rdb.Get(ctx, keys.Fence).Val() != strconv.FormatInt(want, 10) {
				t.Errorf("counter at %d, acquire %d: fence %d, counter %s; want %d", start, i+1, l.Fence, rdb.Get(ctx, keys.Fence).Val(), want)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// An empty restart (SHUTDOWN NOSAVE, no persistence) loses the lock and its
// fence counter: the next holder's fence is still above the old holder's,
// so a write boundary refuses the old holder; its release finds no lock.
func TestFenceSurvivesEmptyRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	keys := testKeys(t)
	lk := NewLocker(rdb)
	var prev *Lock
	for range 3 {
		l, err := lk.Acquire(ctx, keys, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if prev != nil && l.Fence != prev.Fence+1 {
			t.Errorf("fence %d after %d on an existing counter", l.Fence, prev.Fence)
		}
		prev = l
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	old, err := lk.Acquire(ctx, keys, time.Minute)
	if err != nil || old.Fence != prev.Fence+1 {
		t.Fatalf("acquire before the restart: %+v %v", old, err)
	}
	srv.Restart(t)
	if n := rdb.Exists(ctx, keys.Lock, keys.Fence).Val(); n != 0 {
		t.Fatalf("%d of the lock and counter keys survived the restart", n)
	}
	b, err := lk.Acquire(ctx, keys, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if b.Fence <= old.Fence {
		t.Errorf("fence after the restart %d, not above %d before it", b.Fence, old.Fence)
	}
	if err := old.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Errorf("the old holder's release after the restart: %v", err)
	}
	if v := rdb.Get(ctx, keys.Lock).Val(); v != b.Value() {
		t.Errorf("lock value %q, want the new holder's %q", v, b.Value())
	}
}

// A fence counter past 10^14 (seeded from a clock, say) still gives a value
// in decimal digits that renew and release match.
func TestAcquireLargeFence(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Shared(t).Client(t)
	keys := testKeys(t)
	rdb.Set(ctx, keys.Fence, "1712345678901233", 0)
	l, err := NewLocker(rdb).Acquire(ctx, keys, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if v := rdb.Get(ctx, keys.Lock).Val(); l.Fence != 1712345678901234 || v != l.Value() || !strings.HasPrefix(v, "1712345678901234:") {
		t.Fatalf("fence %d, value %q, want 1712345678901234 and %q", l.Fence, v, l.Value())
	}
	if err := l.Renew(ctx); err != nil {
		t.Errorf("renew: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("release: %v", err)
	}
}

// A fence counter INCR refuses is a *FenceCounterError naming the key and
// Redis's reason (no script SHA), and nothing is written.
func TestAcquireBadFenceCounter(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Shared(t).Client(t)
	for _, set := range []func(k string){
		func(k string) { rdb.Set(ctx, k, "notint", 0) },
		func(k string) { rdb.Set(ctx, k, "9223372036854775807", 0) },
		func(k string) { rdb.HSet(ctx, k, "f", "v") },
	} {
		keys := testKeys(t)
		set(keys.Fence)
		_, err := NewLocker(rdb).Acquire(ctx, keys, time.Second)
		var fe *FenceCounterError
		if !errors.As(err, &fe) || fe.Key != keys.Fence || fe.Reason == "" || strings.Contains(err.Error(), "script") {
			t.Errorf("acquire over a bad fence counter: %v", err)
		}
		if rdb.Exists(ctx, keys.Lock).Val() != 0 {
			t.Error("the lock key was written")
		}
		rdb.Del(ctx, keys.Fence)
	}
}

// cases.md 2 and 3: an expired holder can neither release nor renew the next holder's lock.
func TestOldHolderCannotTouchNewHolder(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Shared(t).Client(t)
	keys := testKeys(t)
	lk := NewLocker(rdb)
	a, err := lk.Acquire(ctx, keys, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(80 * time.Millisecond)
	b, err := lk.Acquire(ctx, keys, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if b.Fence <= a.Fence {
		t.Errorf("fence did not increase: %d then %d", a.Fence, b.Fence)
	}
	if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Errorf("stale release: %v", err)
	}
	rdb.PExpire(ctx, keys.Lock, 5*time.Second)
	if err := a.Renew(ctx); !errors.Is(err, ErrNotHeld) {
		t.Errorf("stale renew: %v", err)
	}
	if p := rdb.PTTL(ctx, keys.Lock).Val(); p > 5*time.Second {
		t.Errorf("stale renew extended the new holder's key to %s", p)
	}
	if v := rdb.Get(ctx, keys.Lock).Val(); v != b.Value() {
		t.Errorf("value %q, want %q", v, b.Value())
	}
}

// lostReply is a go-redis hook that lets the acquire script run on the
// (real) server and then drops its reply, as a read timeout or a broken
// connection does, once; while getFails is set, GETs fail the same way, and
// while held is, the script fails so without running (still on its way).
type lostReply struct {
	dropped, getFails, held atomic.Bool
}

var errLostReply = &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}

func (h *lostReply) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *lostReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "get" && h.getFails.Load() || (cmd.Name() == "evalsha" || cmd.Name() == "eval") && h.held.Load() {
			cmd.SetErr(errLostReply)
			return errLostReply
		}
		err := next(ctx, cmd)
		if (cmd.Name() == "evalsha" || cmd.Name() == "eval") && err == nil && h.dropped.CompareAndSwap(false, true) {
			cmd.SetErr(errLostReply)
			return errLostReply
		}
		return err
	}
}

func (h *lostReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// An acquire whose reply is lost after the server ran it took the lock all
// the same: Acquire finds that lock by its owner token and releases it, so
// it does not block the key for a whole lease; when it cannot look, the
// error names the owner and the lease.
func TestAcquireLostReply(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Shared(t)
	keys := testKeys(t)
	rdb := srv.Client(t)
	hook := &lostReply{}
	rdb.AddHook(hook)
	lk := NewLocker(rdb)

	_, err := lk.Acquire(ctx, keys, time.Minute)
	var unsure *UnsureAcquireError
	if !errors.As(err, &unsure) || !unsure.Released || !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "was released") {
		t.Fatalf("lost reply: %v", err)
	}
	if n := srv.Client(t).Exists(ctx, keys.Lock).Val(); n != 0 {
		t.Errorf("the lock the lost acquire took is still there")
	}
	if f, _ := srv.Client(t).Get(ctx, keys.Fence).Int64(); f <= math.MaxInt32 {
		t.Errorf("fence counter %d, want the fence the lost acquire issued (never reset)", f)
	}

	// The look fails too: the error says the lock may be held, by whom and
	// for how long.
	hook.dropped.Store(false)
	hook.getFails.Store(true)
	_, err = lk.Acquire(ctx, keys, time.Minute)
	if !errors.As(err, &unsure) || unsure.Released || unsure.CheckErr == nil ||
		!strings.Contains(err.Error(), "for owner "+unsure.Owner+" for up to 1m; looking for it failed") {
		t.Fatalf("lost reply, failed look: %v", err)
	}
	if v := srv.Client(t).Get(ctx, keys.Lock).Val(); !strings.HasSuffix(v, ":"+unsure.Owner) {
		t.Errorf("lock value %q, want the unsure acquire's", v)
	}

	// The call is still on its way when Acquire looks: nothing is found,
	// and the error says the lock may yet appear, and how to free it.
	srv.Client(t).Del(ctx, keys.Lock)
	hook.getFails.Store(false)
	hook.held.Store(true)
	_, err = lk.Acquire(ctx, keys, time.Minute)
	if !errors.As(err, &unsure) || unsure.Released || unsure.CheckErr != nil ||
		!strings.Contains(err.Error(), "it was not there yet; lockctl unlock --key \""+keys.Lock+"\" --owner "+unsure.Owner+" frees it") {
		t.Fatalf("lost reply, lock not there yet: %v", err)
	}
	hook.held.Store(false)

	// A failed dial never sent the call: no lock to look for.
	closed := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = closed.Close() })
	if _, err := NewLocker(closed).Acquire(ctx, keys, time.Minute); err == nil || errors.As(err, &unsure) {
		t.Errorf("a failed dial taken for a lost reply: %v", err)
	}

	// An error reply is no lost reply: nothing is looked for.
	srv.Client(t).Del(ctx, keys.Lock)
	srv.Client(t).Set(ctx, keys.Fence, "x", 0)
	if _, err := NewLocker(srv.Client(t)).Acquire(ctx, keys, time.Minute); errors.As(err, &unsure) {
		t.Errorf("a BADFENCE reply taken for a lost one: %v", err)
	}
}

func TestAcquireWrongType(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Shared(t).Client(t)
	keys := testKeys(t)
	rdb.HSet(ctx, keys.Lock, "f", "v")
	_, err := NewLocker(rdb).Acquire(ctx, keys, time.Second)
	var held *HeldError
	if !errors.As(err, &held) || held.Type != "hash" || held.PTTL != -time.Millisecond {
		t.Fatalf("acquire over a hash: %v (%+v)", err, held)
	}
	l := &Lock{locker: NewLocker(rdb), Keys: keys, Owner: "x", Fence: 1, Lease: time.Second}
	if err := l.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Errorf("release over a hash: %v", err)
	}
	if err := l.Renew(ctx); !errors.Is(err, ErrNotHeld) {
		t.Errorf("renew over a hash: %v", err)
	}
	// PTTL -1: the renewal set no expiry on the hash.
	if typ, pttl := rdb.Type(ctx, keys.Lock).Val(), rdb.Do(ctx, "PTTL", keys.Lock).Val(); typ != "hash" || pttl != int64(-1) {
		t.Errorf("after release and renew the key is a %q with PTTL %v, want the untouched hash", typ, pttl)
	}
	if rdb.Exists(ctx, keys.Fence).Val() != 0 {
		t.Error("a refused acquire created the fence counter")
	}
}

// A holder's value of 8 MB comes back as its size and first HeldValueBytes
// bytes: a refused acquire (each retry of run --wait) reads no more.
func TestAcquireHugeHolderValue(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Shared(t).Client(t)
	keys := testKeys(t)
	big := strings.Repeat("x", 8<<20)
	rdb.Set(ctx, keys.Lock, big, time.Minute)
	_, err := NewLocker(rdb).Acquire(ctx, keys, time.Second)
	var held *HeldError
	if !errors.As(err, &held) {
		t.Fatalf("acquire over 8 MB: %.100v, want a *HeldError", err)
	}
	if held.Type != "string" || held.Size != int64(len(big)) || held.Value != big[:HeldValueBytes] || !held.Truncated() {
		t.Fatalf("acquire over 8 MB: size %d, %d bytes read, %.100v", held.Size, len(held.Value), err)
	}
	if n := len(err.Error()); n > 1024 {
		t.Errorf("the error is %d bytes long, want under 1 KB", n)
	}
}

// A GET the server refuses (here an ACL without GET) is an error from Renew
// and Release, not ErrNotHeld: only a wrong-type key reads as not held.
func TestRenewReleaseGetDenied(t *testing.T) {
	ctx := context.Background()
	admin, rdb := clientWithout(t, "get")
	keys := testKeys(t)
	l, err := NewLocker(rdb).Acquire(ctx, keys, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Renew(ctx); err == nil || errors.Is(err, ErrNotHeld) {
		t.Errorf("renew without GET: %v, want the ACL error", err)
	}
	if err := l.Release(ctx); err == nil || errors.Is(err, ErrNotHeld) {
		t.Errorf("release without GET: %v, want the ACL error", err)
	}
	if v := admin.Get(ctx, keys.Lock).Val(); v != l.Value() {
		t.Errorf("lock value %q after the refused calls, want %q", v, l.Value())
	}
}

// clientWithout returns the shared server's admin client and a client of
// an ACL user denied command, removed when t ends.
func clientWithout(t *testing.T, command string) (admin, denied *redis.Client) {
	ctx := context.Background()
	s := redistest.Shared(t)
	admin = s.Client(t)
	user := "lockcore-no" + command
	if err := admin.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", "-"+command).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Do(context.Background(), "ACL", "DELUSER", user) })
	denied = redis.NewClient(&redis.Options{Addr: s.Addr, Username: user, Password: "pw"})
	t.Cleanup(func() { _ = denied.Close() })
	return admin, denied
}

// Mutual exclusion and strictly increasing fences under contention.
func TestAcquireContention(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Shared(t).Client(t)
	keys := testKeys(t)
	lk := NewLocker(rdb)
	var inside, maxInside, wins atomic.Int64
	var mu sync.Mutex
	var fences []int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 30 {
				l, err := lk.Acquire(ctx, keys, 5*time.Second)
				if err != nil {
					continue
				}
				n := inside.Add(1)
				if n > maxInside.Load() {
					maxInside.Store(n)
				}
				mu.Lock()
				fences = append(fences, l.Fence)
				mu.Unlock()
				wins.Add(1)
				inside.Add(-1)
				if err := l.Release(ctx); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if maxInside.Load() > 1 {
		t.Errorf("%d holders at once", maxInside.Load())
	}
	seen := map[int64]bool{}
	for _, f := range fences {
		if seen[f] {
			t.Fatalf("fence %d issued twice", f)
		}
		seen[f] = true
	}
	if wins.Load() == 0 {
		t.Fatal("nobody acquired")
	}
	// One INCR per acquisition: the fences are consecutive, the counter at
	// the last.
	first, last := slices.Min(fences), slices.Max(fences)
	if c, _ := rdb.Get(ctx, keys.Fence).Int64(); c != last || last-first+1 != wins.Load() {
		t.Errorf("fence counter %d, fences %d..%d, acquisitions %d", c, first, last, wins.Load())
	}
}

// flaky wraps a client and fails script calls on demand (the renewal-loss
// fault of bsm/redislock's tests).
type flaky struct {
	*redis.Client
	fail atomic.Bool
}

var errInjected = errors.New("injected fault")

func (f *flaky) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if f.fail.Load() {
		c := redis.NewCmd(ctx)
		c.SetErr(errInjected)
		return c
	}
	return f.Client.EvalSha(ctx, sha, keys, args...)
}

func (f *flaky) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	if f.fail.Load() {
		c := redis.NewCmd(ctx)
		c.SetErr(errInjected)
		return c
	}
	return f.Client.Eval(ctx, script, keys, args...)
}

func trustedLease(t *testing.T, lease, every, budget time.Duration) Lease {
	p := Policy{LeaseCap: lease, RenewBound: time.Hour, RenewEvery: every}
	l, err := p.LeaseFor(budget, ModeTrusted)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestKeeperRenewsUntilBudget(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Shared(t).Client(t)
	keys := testKeys(t)
	// A lease of 1s renewed every 100ms leaves room for a loaded machine.
	lease := trustedLease(t, time.Second, 100*time.Millisecond, 1200*time.Millisecond)
	l, err := NewLocker(rdb).Acquire(ctx, keys, lease.Lease)
	if err != nil {
		t.Fatal(err)
	}
	var renewals atomic.Int64
	wctx, k := Keep(ctx, l, KeeperOptions{Lease: lease, OnRenew: func(err error) {
		if err == nil {
			renewals.Add(1)
		}
	}})
	<-wctx.Done()
	k.Stop()
	if !errors.Is(context.Cause(wctx), ErrBudgetExceeded) {
		t.Fatalf("cause %v, want budget", context.Cause(wctx))
	}
	if n := renewals.Load(); n < 3 {
		t.Errorf("%d renewals in 1.2s at 100ms, want ≥3", n)
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("lock not held after the keeper ran the budget: %v", err)
	}
}

func TestKeeperStopsWhenLockTaken(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Shared(t).Client(t)
	keys := testKeys(t)
	lease := trustedLease(t, 5*time.Second, 50*time.Millisecond, time.Minute)
	l, err := NewLocker(rdb).Acquire(ctx, keys, lease.Lease)
	if err != nil {
		t.Fatal(err)
	}
	var notHeld atomic.Bool
	wctx, k := Keep(ctx, l, KeeperOptions{Lease: lease, OnRenew: func(err error) {
		if errors.Is(err, ErrNotHeld) {
			notHeld.Store(true)
		}
	}})
	defer k.Stop()
	rdb.Set(ctx, keys.Lock, "99:someone-else", time.Minute)
	select {
	case <-wctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("keeper did not notice the lock was taken")
	}
	if !errors.Is(context.Cause(wctx), ErrLeaseLost) {
		t.Errorf("cause %v, want lost", context.Cause(wctx))
	}
	// A renewal noticed it (renewals every 50ms), not the 5s lease running out.
	if !notHeld.Load() || !time.Now().Before(k.ValidUntil()) {
		t.Errorf("cancelled without a refused renewal (%v) or only once the lease ran out", notHeld.Load())
	}
}

// Renewals fail (partition): the keeper cancels before the lease could end.
func TestKeeperCancelsBeforeLeaseEnds(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Shared(t)
	f := &flaky{Client: srv.Client(t)}
	keys := testKeys(t)
	lease := trustedLease(t, 500*time.Millisecond, 100*time.Millisecond, time.Minute)
	l, err := NewLocker(f).Acquire(ctx, keys, lease.Lease)
	if err != nil {
		t.Fatal(err)
	}
	// The key's expiry on the server (PEXPIRETIME, Unix ms, the same
	// host's clock) after the acquire and after each renewal that got
	// through: read when it is set, not after the cancellation, where a
	// PTTL's round trip on a busy machine outlasted the 7ms margin.
	admin := srv.Client(t)
	var failures, expireAt atomic.Int64
	expireAt.Store(admin.PExpireTime(ctx, keys.Lock).Val().Milliseconds())
	wctx, k := Keep(ctx, l, KeeperOptions{Lease: lease, OnRenew: func(err error) {
		if err != nil {
			failures.Add(1)
			return
		}
		expireAt.Store(admin.PExpireTime(ctx, keys.Lock).Val().Milliseconds())
	}})
	defer k.Stop()
	f.fail.Store(true)
	<-wctx.Done()
	cancelledAt := time.Now()
	if !errors.Is(context.Cause(wctx), ErrLeaseLost) {
		t.Fatalf("cause %v, want lost", context.Cause(wctx))
	}
	if failures.Load() < 2 {
		t.Errorf("%d failed renewals: a failed renewal must be retried while the lease may be valid", failures.Load())
	}
	// The cancel comes at the proof's end (ValidUntil), not before it, and
	// that end precedes the key's expiry on the server: the work stopped
	// first. Where the cancel is seen depends on the scheduler (a loaded
	// machine wakes this goroutine past the 7ms margin), so only a cancel
	// later than half a lease past the expiry fails.
	proof, exp := k.ValidUntil(), time.UnixMilli(expireAt.Load())
	if !proof.Before(exp) {
		t.Errorf("lease proven until %s, after the key expired at %s", proof.Format(time.StampMilli), exp.Format(time.StampMilli))
	}
	if cancelledAt.Before(proof) || cancelledAt.After(exp.Add(lease.Lease/2)) {
		t.Errorf("work cancelled at %s, proof until %s, key expired at %s", cancelledAt.Format(time.StampMilli), proof.Format(time.StampMilli), exp.Format(time.StampMilli))
	}
}

func TestKeeperBound(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Shared(t).Client(t)
	keys := testKeys(t)
	p := Policy{LeaseCap: 200 * time.Millisecond, RenewBound: 300 * time.Millisecond, RenewEvery: 50 * time.Millisecond}
	lease, _ := p.LeaseFor(250*time.Millisecond, ModeTrusted)
	lease.Budget = 0 // no budget: only the bound stops it
	l, err := NewLocker(rdb).Acquire(ctx, keys, lease.Lease)
	if err != nil {
		t.Fatal(err)
	}
	wctx, k := Keep(ctx, l, KeeperOptions{Lease: lease})
	<-wctx.Done()
	k.Stop()
	if !errors.Is(context.Cause(wctx), ErrBoundReached) {
		t.Errorf("cause %v, want bound", context.Cause(wctx))
	}
}

func TestKeeperFixedLeaseEndsAtBudget(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Shared(t).Client(t)
	keys := testKeys(t)
	lease, _ := DefaultPolicy().LeaseFor(time.Second, ModeOrdinary)
	l, err := NewLocker(rdb).Acquire(ctx, keys, lease.Lease)
	if err != nil {
		t.Fatal(err)
	}
	// StopAhead leaves 300ms between the cancel and the lease's end, so a
	// loaded machine still sees the key when the work is cancelled.
	wctx, k := Keep(ctx, l, KeeperOptions{Lease: lease, StopAhead: 300 * time.Millisecond})
	<-wctx.Done()
	k.Stop()
	if !errors.Is(context.Cause(wctx), ErrBudgetExceeded) {
		t.Errorf("cause %v, want budget", context.Cause(wctx))
	}
	if rdb.Exists(ctx, keys.Lock).Val() != 1 {
		t.Error("work was cancelled after the fixed lease had already expired")
	}
}
