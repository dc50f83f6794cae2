//go:build unix

package cmd_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/internal/procstat"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// These tests run the real lockctl binary (testscript's RunMain puts it on
// PATH) against a real redis-server, with real children: sh scripts.

// waitFile waits until path exists and is not empty and returns its content.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second) // a bound, not a speed: a loaded machine starts lockctl slowly
	for time.Now().Before(deadline) {
		if b, ok := written(path); ok {
			return b
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("%s was not written", path)
	return ""
}

// written returns path's content once it is not empty and ends a line.
func written(path string) (string, bool) {
	b, err := os.ReadFile(path)
	return string(b), err == nil && bytes.HasSuffix(b, []byte("\n"))
}

// alive reports whether pid runs: it exists and is not a zombie (an orphan
// killed here may wait for a reaper that never comes in a container).
func alive(pid int) bool {
	st, err := procstat.Read(pid)
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	return st.State != 'Z'
}

// processState is the state letter of pid in /proc ('T': stopped), 0
// when it cannot be read.
func processState(pid int) byte {
	st, _ := procstat.Read(pid)
	return st.State
}

func waitState(t *testing.T, pid int, state byte) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if processState(pid) == state {
			return
		}
	}
	t.Fatalf("pid %d is in state %q, not %q", pid, processState(pid), state)
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(waitFile(t, path)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// Two `lockctl run` on one key, started together, many times: the critical
// sections never overlap and fences strictly increase.
func TestRunMutualExclusion(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	marks := filepath.Join(t.TempDir(), "marks")
	child := `echo "start $LOCKCTL_FENCE" >> "$1"; sleep 0.01; echo "end $LOCKCTL_FENCE" >> "$1"`
	const rounds = 12
	for r := range rounds {
		var ps []*proc
		for range 2 {
			ps = append(ps, startLockctl(t, srv.URL(), "run", "order-demo-001", "--budget", "10s", "--wait", "5s", "--", "sh", "-c", child, "sh", marks))
		}
		for _, p := range ps {
			if code := p.exit(t); code != 0 {
				t.Fatalf("round %d: exit %d: %s", r, code, p.stderr.String())
			}
		}
	}
	b, err := os.ReadFile(marks)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 4*rounds {
		t.Fatalf("%d marks, want %d:\n%s", len(lines), 4*rounds, b)
	}
	first, last := int64(0), int64(0)
	for i := 0; i < len(lines); i += 2 {
		var s, e int64
		if !scanMark(lines[i], "start", &s) || !scanMark(lines[i+1], "end", &e) || s != e {
			t.Fatalf("critical sections overlap at marks %d-%d: %q, %q\n%s", i, i+1, lines[i], lines[i+1], b)
		}
		if s <= last {
			t.Fatalf("fence %d after %d: not strictly increasing", s, last)
		}
		if i == 0 {
			first = s
		}
		last = s
	}
	// Every acquire took the next fence: the first from the counter's
	// TIME start (docs/fencing.md), each later one exactly 1 above.
	if last-first != 2*rounds-1 {
		t.Errorf("fences %d..%d over %d acquires, want consecutive", first, last, 2*rounds)
	}
	ctx := context.Background()
	if n := srv.Client(t).Exists(ctx, orderDemoKey).Val(); n != 0 {
		t.Error("lock left behind")
	}
	if f, _ := srv.Client(t).Get(ctx, "{lock:OrderId:order-demo-001}:fence").Int64(); f != last {
		t.Errorf("fence counter %d, want the last fence %d", f, last)
	}
}

func scanMark(line, word string, fence *int64) bool {
	w, n, ok := strings.Cut(line, " ")
	if !ok || w != word {
		return false
	}
	v, err := strconv.ParseInt(n, 10, 64)
	*fence = v
	return err == nil
}

// leaseLostArgs: a 600ms lease renewed every 200ms, grace 100ms; the child
// writes its pid, then its clock (EPOCHREALTIME) to writes every 10ms, and
// ignores SIGTERM, so only the SIGKILL stops it.
func leaseLostArgs(pidFile, writes string) []string {
	return []string{"run", "order-demo-001", "--budget", "30s", "--lease-cap", "600ms", "--grace", "100ms", "--timeout", "300ms",
		"--", "bash", "-c", `trap "" TERM; echo $$ > "$1"; while :; do echo "$EPOCHREALTIME" >> "$2"; sleep 0.01; done`, "bash", pidFile, writes}
}

// orderDemoKey is the key `lockctl run order-demo-001` holds (the default
// key template).
const orderDemoKey = "lock:OrderId:order-demo-001"

// startLeaseLost starts lockctl run with leaseLostArgs and returns it with
// its child's pid once the child runs under the lease. Beside two CPU
// burners, lockctl once lost its 600ms lease before the starved child ran
// its first line, and killed it (1 of 3 full suites): the tests need a
// child that ran under the lease, so such a run is logged and started
// again, up to 3 times in all, once its key has expired.
func startLeaseLost(t *testing.T, srv *redistest.Server, pidFile, writes string) (*proc, int) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p := startLockctl(t, srv.URL(), leaseLostArgs(pidFile, writes)...)
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
			if _, ok := written(pidFile); ok {
				return p, readPID(t, pidFile)
			}
			if !alive(p.Process.Pid) {
				break
			}
		}
		if alive(p.Process.Pid) {
			t.Fatalf("%s was not written in 20s", pidFile)
		}
		code := p.exit(t)
		if attempt == 3 {
			t.Fatalf("3 runs: lockctl exited (%d) before its child wrote its pid: %s", code, p.stderr.String())
		}
		t.Logf("run %d: lockctl exited (%d) before its child wrote its pid: %s", attempt, code, p.stderr.String())
		rdb := srv.Client(t)
		for end := time.Now().Add(10 * time.Second); rdb.Exists(context.Background(), orderDemoKey).Val() == 1 && time.Now().Before(end); {
			time.Sleep(10 * time.Millisecond)
		}
		_, _ = os.Remove(pidFile), os.Remove(writes)
	}
}

// lastWrite is the time of the last line leaseLostArgs' child wrote.
func lastWrite(t *testing.T, writes string) time.Time {
	t.Helper()
	lines := strings.Fields(waitFile(t, writes))
	sec, err := strconv.ParseFloat(lines[len(lines)-1], 64)
	if err != nil {
		t.Fatalf("%s: %v", writes, err)
	}
	return time.Unix(0, int64(sec*1e9))
}

const lostLease = 600 * time.Millisecond
const lostGrace = 100 * time.Millisecond

// watchdogStopped is what lockctl says when its watchdog stopped the child.
const watchdogStopped = "its watchdog stopped the command"

// checkStoppedForLostLease: after the lease was lost at since (what says
// how), lockctl exits with the lease-lost code, its child (pid) gone, the
// child wrote nothing later than limit + the grace after since, and it got
// a grace between SIGTERM and SIGKILL (up to 100ms: less when the cancel
// came late, never 0, which a cancel at the lease's end would leave), or,
// lockctl starved past its SIGTERM time, its watchdog stopped the child,
// or lockctl, starved past its SIGKILL time, says so (lockcore's
// TestKeeperStopAhead holds the cancel ahead of the proof's end).
// The child's own clock says when it last ran: where the test saw it gone
// depended on how soon a loaded machine woke the test. It returns
// lockctl's stderr.
func checkStoppedForLostLease(t *testing.T, p *proc, pid int, writes string, since time.Time, limit time.Duration, what string) string {
	t.Helper()
	if code := p.exit(t); code != cmd.ExitLeaseLost {
		t.Fatalf("exit %d, want %d: %s", code, cmd.ExitLeaseLost, p.stderr.String())
	}
	if alive(pid) {
		t.Error("child still running after lockctl exited")
	}
	stderr := p.stderr.String()
	switch {
	case strings.Contains(stderr, watchdogStopped):
		t.Logf("lockctl was starved past its SIGTERM time; its watchdog stopped the child: %s", stderr)
	case strings.Contains(stderr, "lockctl acted past the time the lease can be proven"):
		t.Logf("lockctl was starved past its SIGKILL time and acted before its watchdog: %s", stderr)
	case !regexp.MustCompile(`SIGTERM sent to the command, SIGKILL in ([1-9]\d?|100)ms\n`).MatchString(stderr):
		t.Errorf("the child did not get the grace: %s", stderr)
	}
	if late := lastWrite(t, writes).Sub(since); late > limit+lostGrace {
		t.Errorf("child wrote %s after %s; limit %s, grace %s", late, what, limit, lostGrace)
	}
	return stderr
}

func TestRunLeaseLostOverwritten(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	pidFile, writes := filepath.Join(dir, "pid"), filepath.Join(dir, "writes")
	p, pid := startLeaseLost(t, srv, pidFile, writes)
	ctx := context.Background()
	rdb := srv.Client(t)
	pttl := rdb.PTTL(ctx, orderDemoKey).Val()
	rdb.Set(ctx, orderDemoKey, "99:another-owner", time.Minute)
	stderr := checkStoppedForLostLease(t, p, pid, writes, time.Now(), pttl, "the overwrite (limit: what the old lease had left)")
	switch {
	case strings.Contains(stderr, "lease lost: lock:OrderId:order-demo-001 is no longer ours"):
	case strings.Contains(stderr, "lease lost: no renewal of lock:OrderId:order-demo-001 succeeded in time"):
		t.Logf("a loaded machine slowed the renewal that would have seen the overwrite past the lease's proof: %s", stderr)
	default:
		t.Errorf("stderr: %s", stderr)
	}
	if v := rdb.Get(ctx, orderDemoKey).Val(); v != "99:another-owner" {
		t.Errorf("the new owner's lock was touched: %q", v)
	}
}

func TestRunLeaseLostClientPause(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	pidFile, writes := filepath.Join(dir, "pid"), filepath.Join(dir, "writes")
	p, pid := startLeaseLost(t, srv, pidFile, writes)
	ctx := context.Background()
	// Every renewal before now succeeded or the lease was already counting down:
	// the lease cannot outlive paused + lease.
	paused := time.Now()
	if err := srv.Client(t).Do(ctx, "CLIENT", "PAUSE", "1500", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	stderr := checkStoppedForLostLease(t, p, pid, writes, paused, lostLease, "the pause began (limit: the lease)")
	if !strings.Contains(stderr, "SIGKILL sent") && !strings.Contains(stderr, watchdogStopped) {
		t.Errorf("a child ignoring SIGTERM must be killed: %s", stderr)
	}
}

func TestRunLeaseLostServerKilled(t *testing.T) {
	srv, err := redistest.Launch()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	dir := t.TempDir()
	pidFile, writes := filepath.Join(dir, "pid"), filepath.Join(dir, "writes")
	p, pid := startLeaseLost(t, srv, pidFile, writes)
	killed := time.Now()
	srv.Stop()
	stderr := checkStoppedForLostLease(t, p, pid, writes, killed, lostLease, "the server died (limit: the lease)")
	if !strings.Contains(stderr, "lockctl: lease lost: ") {
		t.Errorf("stderr: %s", stderr)
	}
}

func TestRunBudget(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	start := time.Now()
	// A renewed lease of 1.5s with a grace of 200ms: a renewal may come
	// 0.7s late, and the watchdog's SIGTERM comes 50ms after lockctl's. A
	// 300ms lease with 50ms (12ms) lost its lease to a loaded machine, or
	// its watchdog stopped the child first.
	p := startLockctl(t, srv.URL(), "run", "order-demo-001", "--budget", "3s", "--lease-cap", "1500ms", "--grace", "200ms",
		"--", "sh", "-c", `echo $$ > "$1"; sleep 10`, "sh", pidFile)
	pid := readPID(t, pidFile)
	if code := p.exit(t); code != cmd.ExitBudget {
		t.Fatalf("exit %d, want %d: %s", code, cmd.ExitBudget, p.stderr.String())
	}
	if d := time.Since(start); d < 3*time.Second {
		t.Errorf("stopped after %s, before the 3s budget", d)
	}
	if alive(pid) {
		t.Error("child still running after lockctl exited")
	}
	switch stderr := p.stderr.String(); {
	case strings.Contains(stderr, watchdogStopped):
		t.Logf("lockctl was starved past its SIGTERM time; its watchdog stopped the child: %s", stderr)
	case strings.Contains(stderr, "lockctl acted past the time the lease can be proven"):
		t.Logf("lockctl was starved past its SIGKILL time and acted before its watchdog: %s", stderr)
	case !strings.Contains(stderr, "budget 3s reached; SIGTERM sent"):
		t.Errorf("stderr: %s", stderr)
	}
	if srv.Client(t).Exists(context.Background(), orderDemoKey).Val() != 0 {
		t.Error("lock not released")
	}
}

func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, tc := range []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 7", 7},
		{"kill -KILL $$", 128 + 9},
		{`test "$LOCKCTL_KEY" = lock:OrderId:order-demo-001 && test ${#LOCKCTL_OWNER} = 32 && test "$LOCKCTL_FENCE" -gt 0 && date -d "$LOCKCTL_DEADLINE" >/dev/null`, 0},
	} {
		p, code := runLockctl(t, srv.URL(), "run", "order-demo-001", "--budget", "10s", "--", "sh", "-c", tc.script)
		if code != tc.want {
			t.Errorf("%s: exit %d, want %d: %s", tc.script, code, tc.want, p.stderr.String())
		}
	}
	p, code := runLockctl(t, srv.URL(), "run", "order-demo-001", "--budget", "10s", "--", "no-such-command-lockctl")
	if code != cmd.ExitCannotRun || !strings.Contains(p.stderr.String(), `cannot run "no-such-command-lockctl"`) {
		t.Errorf("missing command: exit %d: %s", code, p.stderr.String())
	}
	// Redis unreachable: 3.
	dead := "redis://127.0.0.1:1/0"
	if _, code := runLockctl(t, dead, "run", "order-demo-001", "--budget", "10s", "--", "true"); code != cmd.ExitRedis {
		t.Errorf("unreachable Redis: exit %d", code)
	}
}

func TestRunHeld(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	rdb := srv.Client(t)
	rdb.Set(ctx, orderDemoKey, "41:0123456789abcdef0123456789abcdef", time.Minute)
	p, code := runLockctl(t, srv.URL(), "run", "order-demo-001", "--budget", "10s", "--grace", "1s", "--", "true")
	if code != cmd.ExitNotObtained {
		t.Fatalf("exit %d, want %d", code, cmd.ExitNotObtained)
	}
	if !regexp.MustCompile(`^lockctl: lock not obtained \(--wait 0s\): lock:OrderId:order-demo-001 is held by owner 0123456789abcdef0123456789abcdef \(fence 41\), PTTL [0-9.]+m?s\n$`).MatchString(p.stderr.String()) {
		t.Errorf("stderr: %q", p.stderr.String())
	}
	// An owner with control characters and a line break stays on one line,
	// escaped: it cannot colour or move the terminal.
	rdb.Set(ctx, "lock:OrderId:esc", "5:\x1b[31mevil\nline2", time.Minute)
	p, _ = runLockctl(t, srv.URL(), "run", "esc", "--budget", "10s", "--grace", "1s", "--", "true")
	if want := `is held by owner \x1b[31mevil\nline2 (fence 5)`; !strings.Contains(p.stderr.String(), want) || strings.Count(p.stderr.String(), "\n") != 1 {
		t.Errorf("stderr %q, want one line with %q", p.stderr.String(), want)
	}
	// Ctrl-C, SIGTERM, SIGHUP or SIGQUIT while waiting: 128 + the signal's
	// number, as a shell reports a process the signal ended, one line (no
	// goroutine dump for SIGQUIT), and the holder untouched.
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
		says string
	}{
		{syscall.SIGINT, cmd.ExitInterrupted, "interrupted"}, {syscall.SIGTERM, cmd.ExitTerminated, "terminated"},
		{syscall.SIGHUP, cmd.ExitHangup, "hangup"}, {syscall.SIGQUIT, cmd.ExitQuit, "quit"},
	} {
		tried := acquireCalls(t, rdb)
		w := startLockctl(t, srv.URL(), "run", "order-demo-001", "--budget", "10s", "--grace", "1s", "--wait", "30s", "--", "true")
		// Waiting: its first attempt was refused (the signal handlers are
		// in place from before it).
		for deadline := time.Now().Add(10 * time.Second); acquireCalls(t, rdb) == tried; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("lockctl run --wait made no attempt in 10s")
			}
		}
		_ = w.Process.Signal(tc.sig)
		if code := w.exit(t); code != tc.code || w.stderr.String() != "lockctl: "+tc.says+"\n" {
			t.Errorf("%s while waiting: exit %d (want %d), stderr %q", tc.sig, code, tc.code, w.stderr.String())
		}
		if v := rdb.Get(ctx, orderDemoKey).Val(); v != "41:0123456789abcdef0123456789abcdef" {
			t.Errorf("%s: holder changed to %q", tc.sig, v)
		}
	}
	// --wait outlasts the holder's TTL.
	rdb.PExpire(ctx, orderDemoKey, 300*time.Millisecond)
	p, code = runLockctl(t, srv.URL(), "run", "order-demo-001", "--budget", "10s", "--wait", "5s", "--", "sh", "-c", `echo "$LOCKCTL_FENCE"`)
	// The holder was written without a counter: the counter starts at the
	// server's TIME in µs, far above the holder's 41.
	counter := rdb.Get(ctx, "{lock:OrderId:order-demo-001}:fence").Val()
	if f, err := strconv.ParseInt(strings.TrimSpace(p.stdout.String()), 10, 64); code != 0 || err != nil || strconv.FormatInt(f, 10) != counter || f <= 41 {
		t.Errorf("--wait: exit %d, stdout %q (counter %q), stderr %s", code, p.stdout.String(), counter, p.stderr.String())
	}
}

// An empty restart of Redis (SHUTDOWN NOSAVE, no persistence) between two
// runs loses the lock and its fence counter: the second run's
// LOCKCTL_FENCE is still above the first's (both were 1), so a store that
// refuses lower fences refuses the first run's late writes.
func TestRunFenceAfterEmptyRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	fence := func() int64 {
		t.Helper()
		p, code := runLockctl(t, srv.URL(), "run", "order-demo-001", "--budget", "10s", "--", "sh", "-c", `echo "$LOCKCTL_FENCE"`)
		f, err := strconv.ParseInt(strings.TrimSpace(p.stdout.String()), 10, 64)
		if code != 0 || err != nil {
			t.Fatalf("run: exit %d, stdout %q, stderr %s", code, p.stdout.String(), p.stderr.String())
		}
		return f
	}
	first := fence()
	if next := fence(); next != first+1 {
		t.Errorf("LOCKCTL_FENCE %d after %d on an existing counter, want +1", next, first)
	}
	srv.Restart(t)
	if after := fence(); after <= first+1 {
		t.Errorf("LOCKCTL_FENCE %d after the restart, not above %d before it", after, first+1)
	}
}

// Signals sent to lockctl reach the child; lockctl waits for it, passes its
// code through and releases the lock.
func TestRunForwardsSignals(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGHUP} {
		dir := t.TempDir()
		pidFile, got := filepath.Join(dir, "pid"), filepath.Join(dir, "got")
		script := `trap 'echo ` + signalName(sig) + ` > "$2"; exit 42' ` + signalName(sig) + `; echo $$ > "$1"; while :; do sleep 0.01; done`
		p := startLockctl(t, srv.URL(), "run", "order-demo-001", "--budget", "10s", "--", "sh", "-c", script, "sh", pidFile, got)
		pid := readPID(t, pidFile)
		if err := p.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if code := p.exit(t); code != 42 {
			t.Errorf("%s: exit %d, want the child's 42: %s", sig, code, p.stderr.String())
		}
		if b, _ := os.ReadFile(got); strings.TrimSpace(string(b)) != signalName(sig) {
			t.Errorf("%s: child recorded %q", sig, b)
		}
		if alive(pid) {
			t.Errorf("%s: child still running", sig)
		}
		if srv.Client(t).Exists(context.Background(), orderDemoKey).Val() != 0 {
			t.Errorf("%s: lock not released", sig)
		}
	}
}

// acquireCalls is how many scripts the server has run (EVALSHA calls, from
// INFO commandstats): lockctl run's acquire attempts, in TestRunHeld.
func acquireCalls(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	m := regexp.MustCompile(`cmdstat_evalsha:calls=(\d+)`).FindStringSubmatch(rdb.Info(context.Background(), "commandstats").Val())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "INT"
	case syscall.SIGTERM:
		return "TERM"
	case syscall.SIGQUIT:
		return "QUIT"
	}
	return "HUP"
}

// What lockctl started with ignored stays ignored, for lockctl and the
// child: SIGHUP under nohup, SIGINT and SIGQUIT in a script's background job
// (sh ignores them there). signal.Notify would have re-enabled them, and the
// child, started after, would have died of them.
func TestRunKeepsIgnoredSignals(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	dir := t.TempDir()
	pidFile, got := filepath.Join(dir, "pid"), filepath.Join(dir, "got")
	script := `trap 'echo TERM > "$2"; exit 42' TERM; echo $$ > "$1"; while :; do sleep 0.01; done`
	p := startProc(t, srv.URL(), exec.Command("sh", "-c", `trap '' HUP INT QUIT; exec lockctl "$@"`, "sh",
		"run", "order-demo-001", "--budget", "20s", "--", "sh", "-c", script, "sh", pidFile, got))
	pid := readPID(t, pidFile)
	// Bits 0, 1 and 2 of SigIgn are SIGHUP, SIGINT and SIGQUIT.
	if ign := ignoredSignals(t, pid); ign&0x7 != 0x7 {
		t.Errorf("the child ignores %#x; want SIGHUP, SIGINT and SIGQUIT (0x7) among them", ign)
	}
	for _, s := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT} {
		if err := p.Process.Signal(s); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if !alive(pid) || !alive(p.Process.Pid) {
		t.Fatalf("an ignored signal ended the run: %s", p.stderr.String())
	}
	if err := p.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exit(t); code != 42 {
		t.Errorf("exit %d, want the child's 42: %s", code, p.stderr.String())
	}
}

// Started with SIGINT ignored (a script's background job), any command
// ignores SIGQUIT too, as sh meant: no goroutine dump, and simulate
// --redis, watch and the rest run on. SIGTERM still ends it (143).
func TestIgnoredInterruptIgnoresQuit(t *testing.T) {
	srv := redistest.Start(t)
	p := startProc(t, srv.URL(), exec.Command("sh", "-c", `trap '' INT; exec lockctl "$@"`, "sh",
		"watch", "--key", "k", "--interval", "50ms", "--duration", "20s"))
	time.Sleep(300 * time.Millisecond) // watching: its handlers are installed
	for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT} {
		if err := p.Process.Signal(s); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if !alive(p.Process.Pid) {
		t.Fatalf("SIGINT or SIGQUIT ended watch: %s", p.stderr.String())
	}
	if err := p.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exit(t); code != cmd.ExitTerminated || p.stderr.String() != "lockctl: terminated\n" {
		t.Errorf("exit %d, stderr %q; want 143 and one line", code, p.stderr.String())
	}
}

// ignoredSignals is the SigIgn mask of pid in /proc/PID/status.
func ignoredSignals(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if hex, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no SigIgn in /proc/%d/status", pid)
	return 0
}

// Killed with SIGKILL, lockctl runs no more code: its watchdog SIGKILLs the
// child's process group, so what the child started (a sleep under sh) does
// not run on without the lock. PR_SET_PDEATHSIG alone ended sh only.
func TestRunKilledTakesTheGroupAlong(t *testing.T) {
	srv := redistest.Start(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	p := startLockctl(t, srv.URL(), "run", "order-demo-001", "--budget", "30s",
		"--", "sh", "-c", `sleep 60 & echo $! > "$1"; wait`, "sh", pidFile)
	grandchild := readPID(t, pidFile)
	if err := p.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.Wait()
	for deadline := time.Now().Add(5 * time.Second); alive(grandchild); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(grandchild, syscall.SIGKILL)
			t.Fatal("what the command started ran on after lockctl was killed")
		}
	}
}

// After a run that ends normally its watchdog ends too, reaped by lockctl:
// left to a parent that does not reap (PID 1 in a container), it stayed a
// zombie.
func TestRunWatchdogEnds(t *testing.T) {
	srv := redistest.Start(t)
	// The command ends once the test has seen the watchdog: a sleep 0.3
	// ended first under load, and the test looked for a watchdog for 5s.
	goFile := filepath.Join(t.TempDir(), "go")
	p := startLockctl(t, srv.URL(), "run", "order-demo-001", "--budget", "30s", "--",
		"sh", "-c", `while [ ! -e "$1" ]; do sleep 0.01; done`, "sh", goFile)
	var wd int
	for deadline := time.Now().Add(10 * time.Second); wd == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no watchdog while the command runs")
		}
		wd = watchdogOf(p.Process.Pid)
	}
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := p.exit(t); code != 0 {
		t.Fatalf("exit %d: %s", code, p.stderr.String())
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(wd)); err == nil {
		t.Error("the watchdog is still there (running, or a zombie) after lockctl exited")
	}
}

// watchdogOf is the pid of lockctl's watchdog, 0 when it has none.
func watchdogOf(lockctl int) int {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), "\x00__lockctl-watchdog\x00") {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if ppid, err := parentPID(pid); err == nil && ppid == lockctl {
			return pid
		}
	}
	return 0
}

// parentPID reads pid's parent from /proc/PID/stat.
func parentPID(pid int) (int, error) {
	st, err := procstat.Read(pid)
	return st.PPID, err
}

// A closed stderr does not end lockctl by SIGPIPE at its first message once
// it holds the lock (here: the budget is reached): it stops the child,
// releases the lock and exits 124.
func TestRunClosedStderr(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	c := exec.Command("lockctl", "run", "order-demo-001", "--budget", "1s", "--grace", "100ms", "--", "sleep", "10")
	home := t.TempDir()
	c.Env = append(os.Environ(), "LOCKCTL_REDIS_URL="+srv.URL(), "HOME="+home, "XDG_CONFIG_HOME="+home)
	c.Stderr = w
	err = c.Run()
	if code := c.ProcessState.ExitCode(); code != cmd.ExitBudget {
		t.Errorf("exit %d (%v), want %d", code, err, cmd.ExitBudget)
	}
	if srv.Client(t).Exists(context.Background(), orderDemoKey).Val() != 0 {
		t.Error("lock not released")
	}
}

// A signal forwarded to a stopped child (stopped by someone else, without a
// terminal) comes with a SIGCONT, as a shell's kill sends to a stopped job:
// otherwise it stays pending until the budget ends.
func TestRunSignalsStoppedChild(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	dir := t.TempDir()
	pidFile, got := filepath.Join(dir, "pid"), filepath.Join(dir, "got")
	script := `trap 'echo TERM > "$2"; exit 42' TERM; echo $$ > "$1"; while :; do sleep 0.01; done`
	p := startLockctl(t, srv.URL(), "run", "order-demo-001", "--budget", "20s", "--", "sh", "-c", script, "sh", pidFile, got)
	pid := readPID(t, pidFile)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitState(t, pid, 'T')
	if err := p.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exit(t); code != 42 {
		t.Errorf("exit %d, want the child's 42: %s", code, p.stderr.String())
	}
}

// A key that is not UTF-8 shows as U+FFFD in the dry run's JSON; lock_hex
// and fence_hex name its bytes, and UTF-8 keys have neither.
func TestRunDryRunHexKeys(t *testing.T) {
	code, out, errOut := run(t, "run", "--dry-run", "--budget", "10s", "--key-template", "lk:{value}", "-o", "json", "o\xff", "--", "true")
	if code != 0 || !strings.Contains(out, `"lock_hex": "6c6b3a6fff"`) || !strings.Contains(out, `"fence_hex": "7b6c6b3a6fff7d3a66656e6365"`) {
		t.Errorf("exit %d, stdout %s, stderr %s", code, out, errOut)
	}
	if _, out, _ := run(t, "run", "--dry-run", "--budget", "10s", "-o", "json", "o", "--", "true"); strings.Contains(out, "_hex") {
		t.Errorf("UTF-8 keys have a hex form: %s", out)
	}
}

// A child that stopped itself (SIGSTOP) still gets the budget's SIGTERM:
// it is continued after it, so it can handle it within the grace, rather
// than holding it pending until the SIGKILL.
func TestRunContinuesStoppedChildOnBudget(t *testing.T) {
	srv := redistest.Start(t)
	p := startLockctl(t, srv.URL(), "run", "order-demo-001", "--budget", "500ms", "--lease-cap", "2s", "--mode", "ordinary", "--grace", "200ms",
		"--", "sh", "-c", `trap 'echo got TERM >&2; exit 7' TERM; kill -STOP $$; sleep 10`)
	if code := p.exit(t); code != cmd.ExitBudget {
		t.Fatalf("exit %d, want %d: %s", code, cmd.ExitBudget, p.stderr.String())
	}
	if errOut := p.stderr.String(); !strings.Contains(errOut, "got TERM") || strings.Contains(errOut, "SIGKILL sent") {
		t.Errorf("the stopped child never handled SIGTERM: %s", errOut)
	}
}
