package lockcore

import (
	"context"
	"errors"
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

func TestAcquireWait(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Shared(t).Client(t)
	keys := testKeys(t)
	lk := NewLocker(rdb)
	a, err := lk.Acquire(ctx, keys, 150*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}

	// wait 0: one attempt, the holder is named.
	start := time.Now()
	_, err = lk.AcquireWait(ctx, keys, time.Second, 0, DefaultBackoff)
	var held *HeldError
	if !errors.As(err, &held) || held.Value != a.Value() || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("wait 0: %v after %s", err, time.Since(start))
	}

	// A wait longer than the holder's TTL gets the lock once it expires.
	b, err := lk.AcquireWait(ctx, keys, time.Second, time.Second, DefaultBackoff)
	if err != nil {
		t.Fatal(err)
	}
	if b.Fence != a.Fence+1 {
		t.Errorf("fence %d after %d", b.Fence, a.Fence)
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 600*time.Millisecond {
		t.Errorf("obtained after %s; the holder's lease was 150ms", d)
	}

	// A wait shorter than the holder's TTL runs out with the holder named.
	start = time.Now()
	_, err = lk.AcquireWait(ctx, keys, time.Second, 120*time.Millisecond, DefaultBackoff)
	if !errors.As(err, &held) || held.Value != b.Value() {
		t.Fatalf("short wait: %v", err)
	}
	if d := time.Since(start); d < 120*time.Millisecond || d > 400*time.Millisecond {
		t.Errorf("gave up after %s, want about 120ms", d)
	}

	// ctx ends the wait.
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := lk.AcquireWait(cctx, keys, time.Second, 10*time.Second, DefaultBackoff); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled wait: %v", err)
	}
}

// StopAhead moves the lost cancel earlier, so a worker given that long to
// stop is gone before the lease could end.
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
	wctx, k := Keep(ctx, l, KeeperOptions{Lease: lease, StopAhead: 500 * time.Millisecond})
	<-wctx.Done()
	k.Stop()
	if !errors.Is(context.Cause(wctx), ErrLeaseLost) {
		t.Fatalf("cause %v", context.Cause(wctx))
	}
	// Without StopAhead the cancel would come at ValidUntil (PTTL ≈ margin 12ms).
	if early := time.Until(l.ValidUntil()); early < 250*time.Millisecond || early > 500*time.Millisecond {
		t.Errorf("cancelled %s before ValidUntil, want about 500ms", early)
	}
	if pttl := srv.Client(t).PTTL(ctx, keys.Lock).Val(); pttl < 250*time.Millisecond {
		t.Errorf("PTTL %s at cancel, want over 250ms left", pttl)
	}
}

// A renewal that hangs (server paused with CLIENT PAUSE, client read timeout
// far longer than the lease) must not delay the cancel.
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
	if err := admin.Do(ctx, "CLIENT", "PAUSE", "1000", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	wctx, k := Keep(ctx, l, KeeperOptions{Lease: lease})
	defer k.Stop()
	select {
	case <-wctx.Done():
	case <-time.After(time.Second):
		t.Fatal("keeper blocked in a hanging renewal past the lease")
	}
	if !errors.Is(context.Cause(wctx), ErrLeaseLost) {
		t.Errorf("cause %v", context.Cause(wctx))
	}
	if late := time.Since(l.ValidUntil()); late > 50*time.Millisecond {
		t.Errorf("cancelled %s after ValidUntil", late)
	}
}
