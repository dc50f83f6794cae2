//go:build linux

package cmd_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/internal/redistest"
)

// writerScript appends "NAME FENCE EPOCHREALTIME" to $3 every 5ms (read -t
// on a FIFO that never gets data sleeps without a fork), $4 times (0: for
// ever). With $5 = keep it ignores SIGTERM: only a SIGKILL stops it, the
// worst case for the one who takes the lock over.
const writerScript = `[ "$5" = keep ] && trap "" TERM
exec 9<>"$2"
i=0
while [ "$4" = 0 ] || [ "$i" -lt "$4" ]; do
  echo "$1 $LOCKCTL_FENCE $EPOCHREALTIME" >> "$3"
  i=$((i+1))
  read -t 0.005 -u 9 || :
done`

// freezeRound is one A-then-B takeover on its own key and file.
type freezeRound struct {
	key, fifo, file string
	// stopAfterFork: A's lockctl SIGSTOPs itself between its child's start
	// and its watch line to the watchdog (hook_linux_test.go).
	stopAfterFork bool
}

func newFreezeRound(t *testing.T, n int) freezeRound {
	dir := t.TempDir()
	r := freezeRound{key: fmt.Sprintf("freeze:%d", n), fifo: filepath.Join(dir, "fifo"), file: filepath.Join(dir, "writes")}
	if err := syscall.Mkfifo(r.fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

// start starts `lockctl run` on the round's key whose child writes as name.
func (r freezeRound) start(t *testing.T, url, name string, count int, extra ...string) *proc {
	args := append([]string{"run", "--key", r.key, "--budget", "60s", "--lease-cap", "2s"}, extra...)
	args = append(args, "--", "bash", "-c", writerScript, "bash", name, r.fifo, r.file, strconv.Itoa(count), "keep")
	if name == "A" && r.stopAfterFork { // env execs lockctl: the pid is lockctl's
		return startProc(t, url, exec.Command("env", append([]string{"LOCKCTL_TEST_STOP_AFTER_FORK=1", "lockctl"}, args...)...))
	}
	return startLockctl(t, url, args...)
}

// waitWrites waits until the file holds a line of name's.
func (r freezeRound) waitWrites(name string) error {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if b, _ := os.ReadFile(r.file); strings.Contains(string(b), name+" ") {
			return nil
		}
	}
	return fmt.Errorf("%s's child wrote nothing in 10s", name)
}

// margin checks that no line of A follows B's first line and returns the
// time from A's last write to B's first (EPOCHREALTIME, wall clock).
func (r freezeRound) margin() (time.Duration, error) {
	b, err := os.ReadFile(r.file)
	if err != nil {
		return 0, err
	}
	var lastA, firstB float64
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			return 0, fmt.Errorf("line %d: %q", i+1, line)
		}
		at, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			return 0, fmt.Errorf("line %d: %q", i+1, line)
		}
		switch {
		case f[0] == "A" && firstB > 0:
			return 0, fmt.Errorf("A's child wrote at %.6f, after B's first write at %.6f (line %d)", at, firstB, i+1)
		case f[0] == "A":
			lastA = at
		case firstB == 0:
			firstB = at
		}
	}
	if lastA == 0 || firstB == 0 {
		return 0, fmt.Errorf("A wrote at %f, B at %f:\n%s", lastA, firstB, b)
	}
	return time.Duration((firstB - lastA) * float64(time.Second)), nil
}

// takeover runs one round: A holds the key and writes; freeze (SIGSTOP of
// A's lockctl, or a stalled connection) keeps A from renewing; B waits
// for the key and writes; then thaw. A must exit with the lease-lost code
// and its child must have stopped writing before B's child began.
func (r freezeRound) takeover(t *testing.T, aURL, bURL string, freeze func(a *proc), thaw func(a *proc)) (time.Duration, error) {
	a := r.start(t, aURL, "A", 0)
	if err := r.waitWrites("A"); err != nil {
		return 0, fmt.Errorf("%v: %s", err, a.stderr.String())
	}
	freeze(a)
	b := r.start(t, bURL, "B", 40, "--wait", "10s")
	bCode := b.exit(t)
	thaw(a)
	if code := a.exit(t); code != cmd.ExitLeaseLost {
		return 0, fmt.Errorf("A's lockctl: exit %d, want %d: %s", code, cmd.ExitLeaseLost, a.stderr.String())
	}
	if bCode != 0 {
		return 0, fmt.Errorf("B's lockctl: exit %d: %s", bCode, b.stderr.String())
	}
	return r.margin()
}

// envInt reads a round count from the environment (.ci/run raises it).
func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a count", name, s)
	}
	return n
}

// startBurners runs n `yes > /dev/null`, stopped when the test ends.
func startBurners(t *testing.T, n int) {
	for range n {
		c := exec.Command("yes")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
}

// A lockctl stopped (SIGSTOP: a GC pause, a VM freeze of the one process,
// CPU starvation) past its lease cannot renew: its watchdog stops the
// child's group by the lease's end, before another lockctl can take the
// key over, and the stopped lockctl, continued, reports the lease lost.
// LOCKCTL_FREEZE_ROUNDS rounds (default 3) run, 5 at a time, beside
// LOCKCTL_FREEZE_BURNERS CPU burners (default 0).
func TestRunFrozenParent(t *testing.T) {
	srv := redistest.Start(t)
	startBurners(t, envInt(t, "LOCKCTL_FREEZE_BURNERS", 0))
	stop := func(a *proc) { _ = a.Process.Signal(syscall.SIGSTOP) }
	cont := func(a *proc) { _ = a.Process.Signal(syscall.SIGCONT) }
	margins := runRounds(t, envInt(t, "LOCKCTL_FREEZE_ROUNDS", 3), func(r freezeRound) (time.Duration, error) {
		return r.takeover(t, srv.URL(), srv.URL(), stop, cont)
	})
	logMargins(t, margins)
}

// A lockctl stopped between its child's start and telling its watchdog
// the child's group (the watchdog has only the deadline, sent before the
// fork) still has its child's group killed by the lease's end: the
// watchdog finds the group under lockctl's pid in /proc.
func TestRunStoppedAfterFork(t *testing.T) {
	srv := redistest.Start(t)
	// The child runs from the fork on, so its first write can come before
	// lockctl's stop has reached the thread /proc/PID/stat shows: wait for it.
	stopped := func(a *proc) {
		var b []byte
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			b, _ = os.ReadFile(fmt.Sprintf("/proc/%d/stat", a.Process.Pid))
			if i := strings.LastIndexByte(string(b), ')'); i >= 0 && strings.HasPrefix(string(b[i:]), ") T") {
				return
			}
		}
		t.Errorf("A's lockctl is not stopped 10s after its child's first write: %q", b)
	}
	cont := func(a *proc) { _ = a.Process.Signal(syscall.SIGCONT) }
	margins := runRounds(t, 3, func(r freezeRound) (time.Duration, error) {
		r.stopAfterFork = true
		return r.takeover(t, srv.URL(), srv.URL(), stopped, cont)
	})
	logMargins(t, margins)
}

// A live lockctl whose renewals hang behind a connection that stopped
// forwarding (its server is fine: B reaches it directly) stops its child
// before B's child can write.
func TestRunStalledConnection(t *testing.T) {
	srv := redistest.Start(t)
	margins := runRounds(t, 2, func(r freezeRound) (time.Duration, error) {
		px := startStallProxy(t, srv.Addr)
		return r.takeover(t, "redis://"+px.addr()+"/0", srv.URL(), func(*proc) { px.stalled.Store(true) }, func(*proc) { px.stalled.Store(false) })
	})
	logMargins(t, margins)
}

// runRounds runs n rounds, 5 at a time, and returns their margins.
func runRounds(t *testing.T, n int, round func(freezeRound) (time.Duration, error)) []time.Duration {
	var mu sync.Mutex
	var margins []time.Duration
	var wg sync.WaitGroup
	slots := make(chan struct{}, 5)
	for i := range n {
		r := newFreezeRound(t, i)
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			m, err := round(r)
			if err != nil {
				t.Errorf("round %d: %v", i, err)
				return
			}
			mu.Lock()
			margins = append(margins, m)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return margins
}

func logMargins(t *testing.T, margins []time.Duration) {
	if len(margins) == 0 {
		return
	}
	slices.Sort(margins)
	t.Logf("A's last write → B's first write over %d rounds: min %s, median %s, max %s", len(margins),
		margins[0].Round(time.Millisecond), margins[len(margins)/2].Round(time.Millisecond), margins[len(margins)-1].Round(time.Millisecond))
}

// stallProxy forwards TCP to a server until stalled is set: then it holds
// what it reads, in both directions, with every connection left open.
type stallProxy struct {
	ln      net.Listener
	target  string
	stalled atomic.Bool
}

func startStallProxy(t *testing.T, target string) *stallProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, target: target}
	var conns sync.WaitGroup
	t.Cleanup(func() { p.stalled.Store(false); ln.Close(); conns.Wait() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			conns.Add(2)
			go func() { defer conns.Done(); p.pipe(s, c) }()
			go func() { defer conns.Done(); p.pipe(c, s) }()
		}
	}()
	return p
}

func (p *stallProxy) addr() string { return p.ln.Addr().String() }

// pipe copies src to dst, holding each chunk while stalled; it closes both
// when either side ends.
func (p *stallProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for p.stalled.Load() {
			time.Sleep(time.Millisecond)
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// A lockctl killed between its child's start and the watch line (stopped
// there by the test hook, then SIGKILLed) never names the child's group:
// its watchdog found the group in /proc while lockctl lived, since once
// lockctl is gone the child has another parent and nothing ties it to
// lockctl. Before, the group ran on without the lock.
func TestRunKilledAfterFork(t *testing.T) {
	srv := redistest.Start(t)
	for round := range 3 {
		pidFile := filepath.Join(t.TempDir(), "pid")
		p := startProc(t, srv.URL(), exec.Command("env", "LOCKCTL_TEST_STOP_AFTER_FORK=1", "lockctl", "run", "--key", fmt.Sprintf("lock:killed-after-fork:%d", round),
			"--budget", "30s", "--", "sh", "-c", `sleep 60 & echo $! > "$1"; wait`, "sh", pidFile))
		grandchild := readPID(t, pidFile)
		for deadline := time.Now().Add(10 * time.Second); processState(p.Process.Pid) != 'T'; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: lockctl is not stopped at the hook", round)
			}
		}
		time.Sleep(100 * time.Millisecond) // frozen a while, then killed: an OOM kill of a stopped process
		if err := p.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = p.Wait()
		// The watchdog kills it as it reads lockctl's end; 10s bounds a
		// grandchild left running (it sleeps 60s) on a loaded machine.
		for deadline := time.Now().Add(10 * time.Second); alive(grandchild); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				_ = syscall.Kill(grandchild, syscall.SIGKILL)
				t.Fatalf("round %d: what the command started ran on after lockctl was killed before naming its group", round)
			}
		}
	}
}
