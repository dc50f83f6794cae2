package cmd_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/redis/go-redis/v9"
)

// TestSentinelWatchFailover runs `lockctl watch --sentinel --master-name`
// while a lock is held on the primary, forces SENTINEL FAILOVER and stops
// the old primary, so every later sample can only come from the new one.
//
// What the failover does to the lock: the lock and its fence counter were
// replicated before the failover (the test waits for the replica to hold
// the same value), so the promoted replica still has the same owner, the
// same fence and a running TTL: watch reports no ownership event at all
// (no TAKEOVER, FENCE_BACKWARDS, RELEASED or EXPIRED). The sentinel kills
// the old primary's clients and the test then stops that process; go-redis'
// failover client redials through the sentinel, so in the runs seen no
// sample failed (one that does is retried within --timeout:
// TestWatchRetriesStalledSample). A lock written in the last moments before the promotion, not yet
// replicated, would be lost instead (RELEASED/EXPIRED, then a new holder
// with an older fence: FENCE_BACKWARDS); the replica's sync makes that
// window empty here. Then the holder releases on the new primary and a
// second holder acquires there: watch sees RELEASED and ACQUIRED with the
// next fence, which it could not if it still read the stopped old primary.
func TestSentinelWatchFailover(t *testing.T) {
	t.Parallel()
	s := redistest.StartSentinel(t)
	old := redis.NewClient(&redis.Options{Addr: s.Primary.Addr})
	t.Cleanup(func() { _ = old.Close() })
	replica := redis.NewClient(&redis.Options{Addr: s.Replica.Addr})
	t.Cleanup(func() { _ = replica.Close() })

	ks, err := lockcore.NewKeySpec("", "", "", false)
	if err != nil {
		t.Fatal(err)
	}
	keys := ks.Keys("order-failover-001")
	first, err := lockcore.NewLocker(old).Acquire(bg, keys, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for replica.Get(bg, keys.Lock).Val() != first.Value() {
		if time.Now().After(deadline) {
			t.Fatalf("replica never got %s = %s", keys.Lock, first.Value())
		}
		time.Sleep(20 * time.Millisecond)
	}

	w := startWatch(t, nil, "watch", "order-failover-001", "--sentinel", s.Addr(), "--master-name", redistest.MasterName,
		"-o", "jsonl", "--interval", "50ms", "--duration", "1m", "--timeout", "5s")
	if e := w.waitFor(t, inspect.EventHeld, 10*time.Second); e.Owner != first.Owner {
		t.Fatalf("HELD by %s, want %s", e.Owner, first.Owner)
	}

	newAddr := s.Failover(t)
	s.Primary.Stop()
	promoted := redis.NewClient(&redis.Options{Addr: newAddr})
	t.Cleanup(func() { _ = promoted.Close() })
	if v := promoted.Get(bg, keys.Lock).Val(); v != first.Value() {
		t.Fatalf("new primary %s holds %q, want the replicated %q", newAddr, v, first.Value())
	}

	// The first holder releases through the new primary; a second acquires.
	if err := lockcore.NewLocker(promoted).ReleaseValue(bg, keys.Lock, first.Value()); err != nil {
		t.Fatal(err)
	}
	// Within --timeout (5s) of the old primary's death watch must have
	// reconnected through the sentinel to see this.
	w.waitFor(t, inspect.EventReleased, 15*time.Second)
	second, err := lockcore.NewLocker(promoted).Acquire(bg, keys, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	e := w.waitFor(t, inspect.EventAcquired, 10*time.Second)
	if e.Owner != second.Owner || e.Fence == nil || *e.Fence != first.Fence+1 || second.Fence != first.Fence+1 {
		t.Errorf("ACQUIRED %+v, want owner %s fence %d", e, second.Owner, first.Fence+1)
	}
	if code := w.stop(t); code != 130 {
		t.Errorf("watch: exit %d, want 130 (interrupted); stderr %s", code, w.stderr())
	}
	for _, e := range w.seen {
		switch e.Event {
		case inspect.EventTakeover, inspect.EventFenceBackwards, inspect.EventExpired, inspect.EventTTLJump:
			t.Errorf("the failover of a replicated lock showed %s: %+v", e.Event, e)
		}
	}
	var words []string
	for _, e := range w.seen {
		words = append(words, e.Event)
	}
	if got := strings.Join(words, " "); got != "HELD RELEASED ACQUIRED" {
		t.Errorf("events %q, want HELD RELEASED ACQUIRED", got)
	}
	t.Logf("watch stderr across the failover:\n%s", w.stderr())
}

// TestWatchRetriesStalledSample: a server that stops answering for less
// than --timeout (CLIENT PAUSE, as during a failover or a slow fork) makes
// one sample time out; watch says so on stderr, retries, reports the
// recovery and goes on reporting events. A stall longer than --timeout
// after the first failure ends it with exit 3. The retry line masks the
// password, as Execute's last line does: it is a word of the client's own
// error here ("i/o timeout").
func TestWatchRetriesStalledSample(t *testing.T) {
	s, err := redistest.Launch("--requirepass", "timeout")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, Password: "timeout"})
	t.Cleanup(func() { _ = rdb.Close() })
	ks, err := lockcore.NewKeySpec("", "", "", false)
	if err != nil {
		t.Fatal(err)
	}
	keys := ks.Keys("order-stall-001")
	w := startWatch(t, []string{"LOCKCTL_REDIS_URL=redis://:timeout@" + s.Addr + "/0"}, "watch", "order-stall-001", "-o", "jsonl",
		"--interval", "50ms", "--duration", "1m", "--timeout", "1s")
	w.waitFor(t, inspect.EventFree, 10*time.Second)
	// 1.5s: the sample in flight times out after 1s, the next one is
	// answered when the pause ends, 0.5s into the retry window.
	if err := rdb.Do(bg, "CLIENT", "PAUSE", "1500", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(w.stderr(), "answers again") {
		if time.Now().After(deadline) {
			t.Fatalf("no recovery line; stderr %q", w.stderr())
		}
		time.Sleep(50 * time.Millisecond)
	}
	l, err := lockcore.NewLocker(rdb).Acquire(bg, keys, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if e := w.waitFor(t, inspect.EventAcquired, 10*time.Second); e.Owner != l.Owner {
		t.Errorf("ACQUIRED %+v, want owner %s", e, l.Owner)
	}
	errOut := w.stderr()
	if !strings.Contains(errOut, "i/o ***; retrying for up to 1s (--timeout)") || strings.Count(errOut, "\n") != 2 {
		t.Errorf("stderr %q: want one retry line, the password masked, and one recovery line", errOut)
	}

	// A pause longer than the window: the retry gives up, exit 3.
	if err := rdb.Do(bg, "CLIENT", "PAUSE", "4000", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		for e := range w.events {
			_ = e
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatalf("watch still running after a 4s stall with --timeout 1s; stderr %q", w.stderr())
	}
	_ = w.cmd.Wait()
	if code := w.cmd.ProcessState.ExitCode(); code != 3 {
		t.Errorf("exit %d after a stall longer than --timeout, want 3; stderr %q", code, w.stderr())
	}
}
