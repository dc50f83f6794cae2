//go:build unix

package cmd_test

import (
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
)

// ownershipEvents are the events of a holder changing; a companion key (a
// fence counter) must never have one.
var ownershipEvents = []string{inspect.EventHeld, inspect.EventAcquired, inspect.EventRenewed, inspect.EventReleased,
	inspect.EventExpired, inspect.EventTakeover}

// TestWatchPatternRealHolders: `watch --pattern '*'` over a server,
// through Sentinel, and over a 3-primary cluster, follows real `lockctl run` holders through each
// ownership change: ACQUIRED and RENEWED (a 3s lease renewed), RELEASED
// (the run ends), EXPIRED (its lockctl SIGKILLed: nothing releases it) and
// TAKEOVER (a second run takes the lock of a stopped one, met by the next
// pass of a watch stopped meanwhile); their fence counters, companions
// beside the locks, make no ownership event.
func TestWatchPatternRealHolders(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"server", "sentinel", "cluster"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var url string
			switch kind {
			case "server":
				url = redistest.Start(t).URL()
			case "sentinel":
				url = redistest.StartSentinel(t).URL()
			default:
				url = redistest.StartCluster(t, 3).URL()
			}
			followHolders(t, url)
		})
	}
}

func followHolders(t *testing.T, url string) {
	// A 3s lease is renewed about every second, 1000ms up: above the
	// 500ms a pass's TTL reads are given (fleet.DefaultTolerance).
	hold := func(value string, args ...string) *proc { // a run holding lock:OrderId:<value>
		p := startLockctl(t, url, append([]string{"run", value, "--budget", "30s", "--lease-cap", "3s", "--grace", "200ms"}, args...)...)
		t.Cleanup(func() { _ = p.Process.Kill() })
		return p
	}
	holding := func(value string) *proc { // a run whose child has started
		started := filepath.Join(t.TempDir(), value)
		p := hold(value, "--wait", "10s", "--", "sh", "-c", `echo "$LOCKCTL_FENCE" > "$0"; exec sleep 60`, started)
		waitFile(t, started)
		return p
	}
	// Held before watch starts: its first pass is over once it says HELD.
	holding("wp-s")
	w := startWatch(t, []string{"LOCKCTL_REDIS_URL=" + url}, "watch", "--pattern", "*", "--interval", "50ms", "-o", "jsonl")
	key := func(value string) string { return "lock:OrderId:" + value }
	next := func(event, value string) inspect.Event { // the next event on value's lock of that kind
		t.Helper()
		for {
			if e := w.waitFor(t, event, 20*time.Second); e.Key == key(value) {
				return e
			}
		}
	}

	next(inspect.EventHeld, "wp-s")
	a := hold("wp-a", "--", "sleep", "4")
	next(inspect.EventAcquired, "wp-a")
	next(inspect.EventRenewed, "wp-a")
	if code := a.exit(t); code != 0 {
		t.Fatalf("run wp-a: exit %d; stderr %s", code, a.stderr.String())
	}
	next(inspect.EventReleased, "wp-a")

	b := holding("wp-b")
	next(inspect.EventAcquired, "wp-b")
	_ = b.Process.Kill() // its watchdog ends the child; the lock stays until its lease runs out
	b.exit(t)
	next(inspect.EventExpired, "wp-b")

	c := holding("wp-c")
	next(inspect.EventAcquired, "wp-c")
	_ = w.cmd.Process.Signal(syscall.SIGSTOP) // no pass sees the lock free between the two owners
	_ = c.Process.Signal(syscall.SIGSTOP)     // no renewal: the lease runs out, its watchdog ends the child
	holding("wp-c")                           // waits for c's lease, then takes the lock
	_ = w.cmd.Process.Signal(syscall.SIGCONT)
	if e := next(inspect.EventTakeover, "wp-c"); e.Owner == e.PreviousOwner {
		t.Errorf("TAKEOVER with one owner: %+v", e)
	}
	if code := w.stop(t); code != 130 {
		t.Errorf("watch after Ctrl-C: exit %d; stderr %s", code, w.stderr())
	}
	for _, e := range w.seen {
		if slices.Contains(ownershipEvents, e.Event) && !slices.Contains([]string{key("wp-s"), key("wp-a"), key("wp-b"), key("wp-c")}, e.Key) {
			t.Errorf("ownership event %s on %s, a companion: %+v", e.Event, e.Key, e)
		}
	}
}
