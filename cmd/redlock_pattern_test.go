//go:build unix

package cmd_test

import (
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/lockctl/lockctl/inspect"
)

// TestRedlockWatchPatternRedsync: `watch --pattern '*'` over 3 Redlock
// nodes follows real redsync mutexes (a conformance library) through each
// ownership change, on every node and for the quorum: HELD at the first
// pass, ACQUIRED, RENEWED (Extend), RELEASED (Unlock), EXPIRED (a 1s lease
// left to run out) and TAKEOVER (a second mutex takes an expired lock
// while watch is stopped), with QUORUM_ACQUIRED and QUORUM_LOST (issue 41).
func TestRedlockWatchPatternRedsync(t *testing.T) {
	t.Parallel()
	nodes, url := redlockNodes(t, 3)
	pools := make([]redsyncredis.Pool, len(nodes))
	for i, n := range nodes {
		pools[i] = goredis.NewPool(n.Client(t))
	}
	rs := redsync.New(pools...)
	lock := func(name string, lease time.Duration) *redsync.Mutex {
		t.Helper()
		m := rs.NewMutex(name, redsync.WithExpiry(lease), redsync.WithTries(100))
		if err := m.Lock(); err != nil {
			t.Fatalf("redsync Lock %s: %v", name, err)
		}
		return m
	}
	lock("rs:held", 60*time.Second)
	w := startWatch(t, []string{"LOCKCTL_REDIS_URL=" + url}, "watch", "--pattern", "*", "--interval", "50ms", "--timeout", "2s", "-o", "jsonl")
	next := func(event, key string) inspect.Event { // the first event of that kind on key, seen or to come
		t.Helper()
		if i := slices.IndexFunc(w.seen, func(e inspect.Event) bool { return e.Event == event && e.Key == key }); i >= 0 {
			return w.seen[i] // a node's event and the quorum's come in one sample, in either order
		}
		for {
			if e := w.waitFor(t, event, 20*time.Second); e.Key == key {
				return e
			}
		}
	}
	next(inspect.EventQuorumHeld, "rs:held")

	// A lease longer than any wait below: Extend must find the lock still held
	// however late the watch's event comes on a loaded machine.
	a := lock("rs:a", 30*time.Second)
	if e := next(inspect.EventQuorumAcquired, "rs:a"); e.Owner != a.Value() {
		t.Errorf("QUORUM_ACQUIRED by %q, want redsync's value %q", e.Owner, a.Value())
	}
	time.Sleep(1500 * time.Millisecond) // Extend then moves the expiry 1.5s or more on: above a pass's 500ms tolerance
	if ok, err := a.Extend(); !ok || err != nil {
		t.Fatalf("redsync Extend: %v %v", ok, err)
	}
	next(inspect.EventRenewed, "rs:a")
	if ok, err := a.Unlock(); !ok || err != nil {
		t.Fatalf("redsync Unlock: %v %v", ok, err)
	}
	next(inspect.EventReleased, "rs:a")
	next(inspect.EventQuorumLost, "rs:a")

	lock("rs:b", 3*time.Second) // never unlocked: held for many 50ms passes, then expired
	next(inspect.EventAcquired, "rs:b")
	next(inspect.EventExpired, "rs:b")

	first := lock("rs:c", 2*time.Second)
	next(inspect.EventQuorumAcquired, "rs:c")
	_ = w.cmd.Process.Signal(syscall.SIGSTOP) // no pass sees the lock free between the two owners
	second := lock("rs:c", 60*time.Second)    // retried until first's lease ran out
	_ = w.cmd.Process.Signal(syscall.SIGCONT)
	if e := next(inspect.EventTakeover, "rs:c"); e.Owner != second.Value() || e.PreviousOwner != first.Value() {
		t.Errorf("TAKEOVER %q from %q, want %q from %q", e.Owner, e.PreviousOwner, second.Value(), first.Value())
	}
	if code := w.stop(t); code != 130 {
		t.Errorf("watch after Ctrl-C: exit %d; stderr %s", code, w.stderr())
	}
	for _, e := range w.seen {
		if slices.Contains(ownershipEvents, e.Event) && !slices.Contains([]string{"rs:held", "rs:a", "rs:b", "rs:c"}, e.Key) {
			t.Errorf("ownership event %s on %s, no lock: %+v", e.Event, e.Key, e)
		}
	}
}
