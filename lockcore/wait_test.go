package lockcore

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Min: 10 * time.Millisecond, Max: 80 * time.Millisecond}
	for attempt, want := range []time.Duration{10, 20, 40, 80, 80, 80} {
		want *= time.Millisecond
		for range 50 {
			d := b.Delay(attempt)
			if d < want/2 || d > want {
				t.Fatalf("attempt %d: pause %s outside [%s, %s]", attempt, d, want/2, want)
			}
		}
	}
}

// counting counts the acquire scripts a Locker runs (a NOSCRIPT reply,
// followed by EVAL, is not one): AcquireWait's attempts.
type counting struct {
	*redis.Client
	n atomic.Int64
}

func (c *counting) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	r := c.Client.EvalSha(ctx, sha, keys, args...)
	if !redis.HasErrorPrefix(r.Err(), "NOSCRIPT") {
		c.n.Add(1)
	}
	return r
}

func (c *counting) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	c.n.Add(1)
	return c.Client.Eval(ctx, script, keys, args...)
}

// AcquireWait's bounds are orderings (wait 0 makes one attempt, none
// before the holder's expiry succeeds, a short wait gives up while the
// holder still holds), not upper limits on the wall clock, which a loaded
// machine misses.
func TestAcquireWait(t *testing.T) {
	ctx := context.Background()
	rdb := &counting{Client: redistest.Shared(t).Client(t)}
	keys := testKeys(t)
	lk := NewLocker(rdb)
	a, err := lk.Acquire(ctx, keys, 150*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}

	// wait 0: one attempt, the holder is named.
	start := time.Now()
	before := rdb.n.Load()
	_, err = lk.AcquireWait(ctx, keys, time.Second, 0, DefaultBackoff)
	var held *HeldError
	if !errors.As(err, &held) || held.Value != a.Value() {
		t.Fatalf("wait 0: %v after %s", err, time.Since(start))
	}
	if n := rdb.n.Load() - before; n != 1 {
		t.Errorf("wait 0 made %d attempts, want 1", n)
	}

	// A wait longer than the holder's TTL gets the lock once it expires.
	b, err := lk.AcquireWait(ctx, keys, time.Second, time.Second, DefaultBackoff)
	if err != nil {
		t.Fatal(err)
	}
	if b.Fence != a.Fence+1 {
		t.Errorf("fence %d after %d", b.Fence, a.Fence)
	}
	// Not before the holder's 150ms lease ended (less the cancel margin);
	// within the 1s wait, or it would have failed.
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("obtained after %s; the holder's lease was 150ms", d)
	}

	// A wait shorter than the holder's TTL runs out with the holder named.
	start = time.Now()
	_, err = lk.AcquireWait(ctx, keys, time.Second, 120*time.Millisecond, DefaultBackoff)
	if !errors.As(err, &held) || held.Value != b.Value() {
		t.Fatalf("short wait: %v", err)
	}
	// It waited the whole 120ms, and gave up while b (a 1s lease) held.
	if d := time.Since(start); d < 120*time.Millisecond {
		t.Errorf("gave up after %s, want the whole 120ms", d)
	}
	if !time.Now().Before(b.ValidUntil()) {
		t.Errorf("gave up %s after the holder's lease ended; the wait was 120ms", time.Since(b.ValidUntil()))
	}

	// ctx ends the wait.
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := lk.AcquireWait(cctx, keys, time.Second, 10*time.Second, DefaultBackoff); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled wait: %v", err)
	}
}

// StopAhead moves the lost cancel earlier, so a worker given that long to
// stop is gone before the lease could end. Without it the cancel comes at
// ValidUntil, not before: the test holds as long as the cancel is seen
// less than StopAhead (800ms) late.
func TestKeeperStopAhead(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Shared(t)
	f := &flaky{Client: srv.Client(t)}
	keys := testKeys(t)
	lease := trustedLease(t, time.Second, 100*time.Millisecond, time.Minute)
	l, err := NewLocker(f).Acquire(ctx, keys, lease.Lease)
	if err != nil {
		t.Fatal(err)
	}
	f.fail.Store(true)
	const ahead = 800 * time.Millisecond
	wctx, k := Keep(ctx, l, KeeperOptions{Lease: lease, StopAhead: ahead})
	<-wctx.Done()
	k.Stop()
	if !errors.Is(context.Cause(wctx), ErrLeaseLost) {
		t.Fatalf("cause %v", context.Cause(wctx))
	}
	if early := time.Until(l.ValidUntil()); early <= 0 || early > ahead {
		t.Errorf("cancelled %s before ValidUntil, want up to %s", early, ahead)
	}
	if pttl := srv.Client(t).PTTL(ctx, keys.Lock).Val(); pttl <= 0 {
		t.Errorf("PTTL %s at cancel: the lease had ended", pttl)
	}
}

// A renewal that hangs (server paused with CLIENT PAUSE, client read timeout
// far longer than the lease) must not delay the cancel: it comes while the
// renewal still hangs (before its result), not after. A 5s pause against a
// 400ms lease leaves the cancel seconds of scheduling delay.
func TestKeeperCancelsWhileRenewalHangs(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 10 * time.Second})
	defer rdb.Close()
	keys := testKeys(t)
	lease := trustedLease(t, 400*time.Millisecond, 100*time.Millisecond, time.Minute)
	l, err := NewLocker(rdb).Acquire(ctx, keys, lease.Lease)
	if err != nil {
		t.Fatal(err)
	}
	admin := srv.Client(t)
	if err := admin.Do(ctx, "CLIENT", "PAUSE", "5000", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	var renewed atomic.Bool
	wctx, k := Keep(ctx, l, KeeperOptions{Lease: lease, OnRenew: func(error) { renewed.Store(true) }})
	defer k.Stop()
	select {
	case <-wctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("keeper blocked in a hanging renewal past the lease")
	}
	if renewed.Load() {
		t.Error("the cancel waited for the hanging renewal's result")
	}
	if !errors.Is(context.Cause(wctx), ErrLeaseLost) {
		t.Errorf("cause %v", context.Cause(wctx))
	}
	if time.Now().Before(l.ValidUntil()) {
		t.Errorf("cancelled %s before ValidUntil while the lease was provable", time.Until(l.ValidUntil()))
	}
}
