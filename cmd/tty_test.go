//go:build linux

package cmd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/internal/redistest"
	"golang.org/x/sys/unix"
)

// ttyProc is a program (lockctl, or jobshell running it) on a
// pseudo-terminal: it leads the terminal's session and foreground group.
type ttyProc struct {
	*exec.Cmd
	tty *os.File // the terminal's other end: what is written is typed
	mu  sync.Mutex
	out bytes.Buffer // everything the terminal showed
}

func startOnTTY(t *testing.T, url string, args ...string) *ttyProc {
	t.Helper()
	return startProgOnTTY(t, testEnv(url), "lockctl", args...)
}

// testEnv is the environment added for lockctl on the test server at url.
func testEnv(url string) []string { return []string{"LOCKCTL_REDIS_URL=" + url, "NO_COLOR=1"} }

// startInJob is `lockctl run` started by a job-control shell (jobshell) on
// a pseudo-terminal; lockctl is the job's only process. It returns
// lockctl's pid.
func startInJob(t *testing.T, url string, args ...string) (*ttyProc, int) {
	t.Helper()
	p := startProgOnTTY(t, testEnv(url), "jobshell", append([]string{"lockctl"}, args...)...)
	p.waitOutput(t, "[jobshell: job ")
	p.mu.Lock()
	s := p.out.String()
	p.mu.Unlock()
	s = s[strings.Index(s, "[jobshell: job ")+len("[jobshell: job "):]
	pid, err := strconv.Atoi(s[:strings.IndexByte(s, ']')])
	if err != nil {
		t.Fatal(err)
	}
	return p, pid
}

// startProgOnTTY starts prog with env added to this process's environment
// (HOME and XDG_CONFIG_HOME point at an empty directory).
func startProgOnTTY(t *testing.T, env []string, prog string, args ...string) *ttyProc {
	t.Helper()
	p := &ttyProc{Cmd: exec.Command(prog, args...)}
	home := t.TempDir()
	p.Env = append(append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home), env...)
	// pty.Start makes the terminal prog's controlling terminal (a new
	// session), so prog's group is its foreground group.
	tty, err := pty.Start(p.Cmd)
	if err != nil {
		// A container without /dev/ptmx would skip every terminal test
		// unseen: .ci/run sets LOCKCTL_REQUIRE_PTY, and fails instead.
		if os.Getenv("LOCKCTL_REQUIRE_PTY") != "" {
			t.Fatalf("no pseudo-terminal (/dev/ptmx): %v", err)
		}
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	p.tty = tty
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		if p.ProcessState == nil {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
		_ = tty.Close()
	})
	return p
}

// waitOutput waits until the terminal has shown want.
func (p *ttyProc) waitOutput(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		p.mu.Lock()
		ok := strings.Contains(p.out.String(), want)
		p.mu.Unlock()
		if ok {
			return
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Fatalf("the terminal did not show %q; it showed %q", want, p.out.String())
}

// wantExit waits for the program and reports an exit code other than want.
func (p *ttyProc) wantExit(t *testing.T, want int) {
	t.Helper()
	if code := p.exit(t); code != want {
		p.mu.Lock()
		defer p.mu.Unlock()
		t.Errorf("exit %d, want %d: %s", code, want, p.out.String())
	}
}

func (p *ttyProc) exit(t *testing.T) int {
	t.Helper()
	err := p.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return p.ProcessState.ExitCode()
}

// readLine is a child that reads a line from the terminal: before, it was
// started in a background process group and stopped by SIGTTIN, while
// lockctl renewed the lock for it.
const readLine = `echo $$ > "$1"; echo ready; read x; echo "got $x"; echo "$x" > "$2"`

func TestRunChildReadsTheTerminal(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	dir := t.TempDir()
	p := startOnTTY(t, srv.URL(), "run", "order-demo-001", "--budget", "10s", "--", "sh", "-c", readLine, "sh", filepath.Join(dir, "pid"), filepath.Join(dir, "line"))
	p.waitOutput(t, "ready")
	if _, err := io.WriteString(p.tty, "hello\n"); err != nil {
		t.Fatal(err)
	}
	p.waitOutput(t, "got hello")
	p.wantExit(t, 0)
}

// With stdin redirected, the child may still read the terminal (a password
// prompt on /dev/tty): started in a background group, it was stopped by
// SIGTTIN for good while lockctl renewed the lock for it.
func TestRunChildReadsTheTerminalStdinRedirected(t *testing.T) {
	srv := redistest.Start(t)
	p := startProgOnTTY(t, testEnv(srv.URL()), "sh", "-c", `lockctl run order-demo-001 --budget 10s -- sh -c 'echo ready; read x < /dev/tty; echo "got $x"' < /dev/null; read y; echo "sh got $y"`)
	p.waitOutput(t, "ready")
	time.Sleep(100 * time.Millisecond)
	p.typ(t, "hello\n")
	p.waitOutput(t, "got hello")
	p.typ(t, "after\n") // the terminal came back to the shell
	p.waitOutput(t, "sh got after")
	p.wantExit(t, 0)
}

// A background job of a script (sh without job control: SIGINT ignored,
// stdin from /dev/null) leaves the terminal to the script, as any
// background job there does: the child took it through /dev/tty, and the
// script's read failed.
func TestRunInScriptBackgroundLeavesTheTerminal(t *testing.T) {
	srv := redistest.Start(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	p := startProgOnTTY(t, testEnv(srv.URL()), "sh", "-c", `lockctl run order-demo-001 --budget 10s -- sh -c 'echo $$ > "$1"; exec sleep 1' sh "$1" & echo started; read x; echo "sh got $x"; wait`, "sh", pidFile)
	p.waitOutput(t, "started")
	readPID(t, pidFile) // lockctl has started the child (a fixed sleep was too short under load)
	p.typ(t, "hello\n")
	p.waitOutput(t, "sh got hello")
	p.wantExit(t, 0)
}

// fgReadsHello types fg at a stopped job, then a line the child reads
// ("got hello"), and waits for the job's exit 0.
func (p *ttyProc) fgReadsHello(t *testing.T) {
	t.Helper()
	p.typ(t, "fg\n")
	p.typ(t, "hello\n")
	p.waitOutput(t, "got hello")
	p.waitOutput(t, "[jobshell: exit 0]")
}

// waitWaiting waits until sh (pid) has a child and sleeps, waiting for it.
func waitWaiting(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		if processState(pid) == 'S' && len(strings.TrimSpace(string(b))) > 0 {
			return
		}
	}
	t.Fatalf("sh (pid %d) is not waiting for a child after 10s", pid)
}

func (p *ttyProc) typ(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(p.tty, s); err != nil {
		t.Fatal(err)
	}
}

// Ctrl-Z stops the child and lockctl (renewals stop too); on fg, while the
// lease can still be proven, the child goes on with the terminal, and the
// shell gets it back afterwards.
func TestRunCtrlZ(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	dir := t.TempDir()
	p, lockctl := startInJob(t, srv.URL(), "run", "order-demo-001", "--budget", "30s", "--", "sh", "-c", readLine, "sh", filepath.Join(dir, "pid"), filepath.Join(dir, "line"))
	child := readPID(t, filepath.Join(dir, "pid"))
	p.waitOutput(t, "ready")
	p.typ(t, "\x1a") // Ctrl-Z
	p.waitOutput(t, "[jobshell: stopped]")
	if s := processState(lockctl); s != 'T' {
		t.Fatalf("the shell saw the job stop, lockctl is in state %q", s)
	}
	if s := processState(child); s != 'T' {
		t.Fatalf("lockctl stopped, the child is in state %q", s)
	}
	p.fgReadsHello(t)
	p.typ(t, "after\n")
	p.waitOutput(t, `[jobshell: read "after"]`)
	if srv.Client(t).Exists(context.Background(), "lock:OrderId:order-demo-001").Val() != 0 {
		t.Error("lock not released")
	}
}

// Stopped for longer than the lease: on fg the child is killed without
// running another instruction, lockctl exits 76, and what is typed goes to
// the shell.
func TestRunCtrlZPastTheLease(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	p, _ := startInJob(t, srv.URL(), "run", "order-demo-001", "--budget", "30s", "--lease-cap", "1s", "--grace", "200ms",
		"--", "sh", "-c", readLine, "sh", filepath.Join(dir, "pid"), filepath.Join(dir, "line"))
	child := readPID(t, filepath.Join(dir, "pid"))
	p.waitOutput(t, "ready")
	p.typ(t, "\x1a")
	p.waitOutput(t, "[jobshell: stopped]")
	// Until the 1s lease has expired in Redis (seen there, not slept for).
	rdb := srv.Client(t)
	for deadline := time.Now().Add(10 * time.Second); rdb.Exists(context.Background(), "lock:OrderId:order-demo-001").Val() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the lock of a stopped lockctl is still there after 10s")
		}
	}
	// Typed with fg: a child that went on would read it.
	p.typ(t, "fg\nlate\n")
	p.waitOutput(t, "the command was killed without being continued")
	p.waitOutput(t, fmt.Sprintf("[jobshell: exit %d]", cmd.ExitLeaseLost))
	p.waitOutput(t, `[jobshell: read "late"]`)
	if _, err := os.Stat(filepath.Join(dir, "line")); err == nil {
		t.Error("the child ran after the lease was lost")
	}
	if alive(child) {
		t.Error("the child is still there")
	}
}

// bg, then fg: bash sends no SIGCONT to a running job, it only hands the
// terminal to lockctl's group; the child gets it when it reads.
func TestRunBgThenFg(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	p, _ := startInJob(t, srv.URL(), "run", "order-demo-001", "--budget", "30s",
		"--", "sh", "-c", `echo $$ > "$1"; echo ready; sleep 1; read x; echo "got $x"`, "sh", filepath.Join(dir, "pid"))
	child := readPID(t, filepath.Join(dir, "pid"))
	p.waitOutput(t, "ready")
	// Ctrl-Z once sh waits for sleep: one typed while sh forks it was, at
	// times, lost by sh itself (no stop, no SIGCHLD to lockctl).
	waitWaiting(t, child)
	p.typ(t, "\x1a")
	p.waitOutput(t, "[jobshell: stopped]")
	p.typ(t, "bg\n")
	waitState(t, child, 'S') // continued in the background (sleep 1)
	p.fgReadsHello(t)
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := strings.Count(p.out.String(), "[jobshell: stopped]"); n != 1 {
		t.Errorf("the job stopped %d times, not once: %q", n, p.out.String())
	}
}

// lockctl leads the session (ssh -t host lockctl ..., docker run -t,
// script -c): no shell can continue it, and the kernel discards Ctrl-Z for
// it. lockctl must not stop, and the child goes on.
func TestRunCtrlZWithoutJobControl(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	p := startOnTTY(t, srv.URL(), "run", "order-demo-001", "--budget", "30s", "--", "sh", "-c", readLine, "sh", filepath.Join(dir, "pid"), filepath.Join(dir, "line"))
	p.waitOutput(t, "ready")
	p.typ(t, "\x1a")
	time.Sleep(200 * time.Millisecond)
	if s := processState(p.Process.Pid); s == 'T' {
		t.Fatal("lockctl stopped with nobody to continue it")
	}
	p.typ(t, "hello\n")
	p.waitOutput(t, "got hello")
	p.wantExit(t, 0)
}

// A shell that is PID 1 (docker run -it image sh) runs lockctl as a job:
// lockctl's parent is PID 1, the shell that can continue it, so Ctrl-Z
// stops the job. A walk up lockctl's ancestors that stopped before PID 1
// took lockctl for the leader of its session and ignored Ctrl-Z. As in
// docker, jobshell is PID 1 of a new PID namespace (unshare; --kill-child:
// it ends with unshare) and leads a session of its own, with the terminal
// as its controlling terminal (setsid -c, which takes it over: root).
func TestRunCtrlZUnderPID1(t *testing.T) {
	ns := []string{"--pid", "--fork", "--mount-proc", "--kill-child"}
	if out, err := exec.Command("unshare", append(ns, "true")...).CombinedOutput(); err != nil {
		t.Skipf("no PID namespace here (unshare --pid needs root or user namespaces): %v: %s", err, out)
	}
	srv := redistest.Start(t)
	dir := t.TempDir()
	p := startProgOnTTY(t, testEnv(srv.URL()), "unshare", append(ns, "setsid", "-c", "jobshell", "lockctl", "run", "order-demo-001", "--budget", "30s",
		"--", "sh", "-c", readLine, "sh", filepath.Join(dir, "pid"), filepath.Join(dir, "line"))...)
	p.waitOutput(t, "ready")
	p.typ(t, "\x1a")
	p.waitOutput(t, "[jobshell: stopped]")
	p.fgReadsHello(t)
}

// In a pipeline the terminal stays with the job, where a pager reads it,
// until the child reads it.
func TestRunPipeline(t *testing.T) {
	srv := redistest.Start(t)
	// A pager: the child only writes (and is slow to exit).
	p := startProgOnTTY(t, testEnv(srv.URL()), "sh", "-c", `lockctl run order-demo-001 --budget 30s -- sh -c 'echo out; sleep 1' | { read l; echo "pipe got $l"; read x < /dev/tty; echo "pager got $x"; }`)
	p.waitOutput(t, "pipe got out")
	time.Sleep(100 * time.Millisecond)
	p.typ(t, "hello\n")
	p.waitOutput(t, "pager got hello")
	p.wantExit(t, 0)
	// The child reads the terminal: it gets it when it does.
	p = startProgOnTTY(t, testEnv(srv.URL()), "sh", "-c", `lockctl run order-demo-001 --budget 30s -- sh -c 'echo ready >&2; read x; echo "got $x"' | tr a-z A-Z`)
	p.waitOutput(t, "ready")
	p.typ(t, "hello\n")
	p.waitOutput(t, "GOT HELLO")
	p.wantExit(t, 0)
}

// A pipeline stopped with Ctrl-Z and continued with fg: the pager keeps the
// terminal, since the child never read it.
func TestRunPipelineCtrlZ(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	dir := t.TempDir()
	p := startProgOnTTY(t, testEnv(srv.URL()), "jobshell", "sh", "-c",
		`lockctl run order-demo-001 --budget 30s -- sh -c 'echo $PPID > "$1"; echo out; sleep 1; echo more; sleep 1' sh `+filepath.Join(dir, "ppid")+
			` | { read l; echo "pipe got $l"; read l; echo "pipe got $l"; read x < /dev/tty; echo "pager got $x"; }`)
	lockctl := readPID(t, filepath.Join(dir, "ppid"))
	p.waitOutput(t, "pipe got out")
	p.typ(t, "\x1a")
	p.waitOutput(t, "[jobshell: stopped]")
	// The terminal stops the rest of the pipeline at once, lockctl a moment
	// later (it stops its child first); fg typed within that moment was
	// undone by lockctl's own stop. A person's fg comes later.
	waitState(t, lockctl, 'T')
	p.typ(t, "fg\n")
	p.waitOutput(t, "pipe got more")
	p.typ(t, "hello\n")
	p.waitOutput(t, "pager got hello")
	p.waitOutput(t, "[jobshell: exit 0]")
}

// In a pipeline whose child has taken the terminal, a pager that reads the
// terminal gets SIGTTIN for its whole group, lockctl included: lockctl
// must not stop (its renewals would stop while the child runs on).
func TestRunPipelinePagerReadsAfterChild(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	p := startProgOnTTY(t, testEnv(srv.URL()), "jobshell", "sh", "-c",
		`lockctl run order-demo-001 --budget 30s --lease-cap 2s --grace 200ms -- sh -c 'echo $PPID > "$1"; echo $$ > "$2"; echo ready >&2; read x; echo "child got $x" >&2; echo go; sleep 5; echo done >&2' sh `+filepath.Join(dir, "ppid")+" "+filepath.Join(dir, "child")+` | { read l; read y < /dev/tty; echo "pager got $y"; }`)
	lockctl := readPID(t, filepath.Join(dir, "ppid"))
	p.waitOutput(t, "ready")
	p.typ(t, "hello\n")
	p.waitOutput(t, "child got hello")
	time.Sleep(300 * time.Millisecond) // the pager reads the terminal
	if s := processState(lockctl); s == 'T' {
		t.Errorf("lockctl stopped (SIGTTIN for its group) while the child runs on")
	}
	time.Sleep(2200 * time.Millisecond) // past the 2s lease (1s ran out under load before the child ran): only renewals keep the key
	if !alive(readPID(t, filepath.Join(dir, "child"))) {
		t.Fatal("the child exited early")
	}
	if srv.Client(t).Exists(context.Background(), "lock:OrderId:order-demo-001").Val() != 1 {
		t.Error("the child runs on and the lock is gone")
	}
}

// Styled output on a terminal sends no query to it: adaptive colours asked
// for the background (OSC 11, then a cursor report) and waited 5s for an
// answer that a pty without a terminal emulator never gives.
func TestNoTerminalQueries(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"simulate", "stale-writer"}, {"lease", "--budget", "1200s"}} {
		p := startProgOnTTY(t, []string{"TERM=xterm-256color", "NO_COLOR=", "COLORTERM=", "CI="}, "lockctl", args...)
		if code := p.exit(t); code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		// The reader may still be draining the terminal after the exit.
		p.waitOutput(t, "\x1b[") // colour on a terminal
		p.mu.Lock()
		out := p.out.String()
		p.mu.Unlock()
		if strings.Contains(out, "\x1b]11;") || strings.Contains(out, "\x1b[6n") {
			t.Errorf("%v: queried the terminal: %q", args, out)
		}
	}
}

// Ctrl-Z typed while lockctl starts the child, where lockctl leads its
// session (ssh -t, script -c), hung it in two ways. Caught by lockctl, it
// was forwarded, and lockctl stopped itself after the child, with no shell
// to continue it. Typed between the fork and the exec, it stopped the child
// before its exec while lockctl waited for that exec: no renewals, and the
// terminal with a stopped group that Ctrl-C could not reach.
func TestRunCtrlZAtStart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	// 15 rounds, as 3 parallel runs of 5 on keys of their own.
	for g := range 3 {
		t.Run(strconv.Itoa(g), func(t *testing.T) {
			t.Parallel()
			ctrlZAtStart(t, srv.URL(), fmt.Sprintf("order-demo-00%d", g+1), 5)
		})
	}
}

// ctrlZAtStart runs rounds of TestRunCtrlZAtStart on the lock value.
func ctrlZAtStart(t *testing.T, url, value string, rounds int) {
	t.Helper()
	dir := t.TempDir()
	for i := range rounds {
		ready := filepath.Join(dir, strconv.Itoa(i))
		// GOGC=1: a collection while a child is stopped before its exec
		// froze lockctl (the forking thread is held in vfork); often, then.
		p := startProgOnTTY(t, append(testEnv(url), "GOGC=1"), "lockctl", "run", value, "--budget", "30s", "--", "sh", "-c", `: > "$1"; read x; echo "got $x"`, "sh", ready)
		// Ctrl-Z, again and again, until the child runs. (The terminal
		// discards its output at each one: the child says so in a file.)
		started := false
		// A generous bound: the Ctrl-Z flood slows a loaded 2-core machine's lockctl a lot.
		for deadline := time.Now().Add(30 * time.Second); !started && time.Now().Before(deadline); {
			p.typ(t, "\x1a")
			time.Sleep(50 * time.Microsecond)
			_, err := os.Stat(ready)
			started = err == nil
		}
		if !started {
			t.Fatalf("round %d: the child did not start within 30s: %s", i, stuckStart(p))
		}
		time.Sleep(50 * time.Millisecond)
		p.typ(t, "hello\n")
		p.waitOutput(t, "got hello")
		if code := p.exit(t); code != 0 {
			t.Fatalf("round %d: exit %d: %q", i, code, p.out.String())
		}
	}
}

// stuckStart describes a lockctl whose child never ran: the state, exe,
// wait channel and signal masks of it, its threads and its children (of
// every thread: Go forks from any), then its goroutines, which SIGABRT
// prints to the terminal (SIGQUIT would go to the child).
func stuckStart(p *ttyProc) string {
	pid := p.Process.Pid
	var b strings.Builder
	fmt.Fprintf(&b, "lockctl %d is in state %q;", pid, processState(pid))
	proc := func(dir string) string {
		exe, _ := os.Readlink(dir + "/exe")
		wchan, _ := os.ReadFile(dir + "/wchan")
		status, _ := os.ReadFile(dir + "/status")
		var sig []string
		for l := range strings.SplitSeq(string(status), "\n") {
			if strings.HasPrefix(l, "State") || strings.HasPrefix(l, "Sig") || strings.HasPrefix(l, "ShdPnd") {
				sig = append(sig, strings.Join(strings.Fields(l), " "))
			}
		}
		return fmt.Sprintf("%s runs %s, waits in %s, %s", dir, exe, wchan, strings.Join(sig, ", "))
	}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	for _, task := range tasks {
		fmt.Fprintf(&b, "\n  thread %s", proc(task))
		kids, _ := os.ReadFile(task + "/children")
		for _, k := range strings.Fields(string(kids)) {
			cmdline, _ := os.ReadFile("/proc/" + k + "/cmdline")
			fmt.Fprintf(&b, "\n  child %s (%q)", proc("/proc/"+k), cmdline)
		}
	}
	_ = p.Process.Signal(syscall.SIGABRT)
	time.Sleep(2 * time.Second)
	p.mu.Lock()
	out := p.out.String()
	p.mu.Unlock()
	out = strings.ReplaceAll(out, "^Z", "") // the terminal's echo of each Ctrl-Z
	if len(out) > 20000 {
		out = out[len(out)-20000:]
	}
	return b.String() + "\n" + out
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// Started in the background (lockctl run ... &), a child that reads the
// terminal is stopped by SIGTTIN: lockctl's job stops with it, and fg hands
// the child the terminal. Before, lockctl ran on and renewed the lock for a
// child stopped for good, which fg did not continue.
func TestRunInBackgroundChildReads(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	p := startProgOnTTY(t, testEnv(srv.URL()), "jobshell", "-bg", "lockctl", "run", "order-demo-001", "--budget", "30s",
		"--", "sh", "-c", `echo ready; read x; echo "got $x"`)
	p.waitOutput(t, "ready")
	p.waitOutput(t, "[jobshell: stopped]")
	p.fgReadsHello(t)
}

// Started in the background under stty tostop, lockctl's first message
// (budget reached, SIGTERM sent) stopped it with SIGTTOU: no SIGKILL came,
// and a child that ignores SIGTERM ran on without the lock.
func TestRunInBackgroundTostop(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	p := startProgOnTTY(t, testEnv(srv.URL()), "jobshell", "-bg", "lockctl", "run", "order-demo-001", "--budget", "1s", "--lease-cap", "1s", "--grace", "200ms",
		"--", "sh", "-c", `trap '' TERM; sleep 2; : > "$1"`, "sh", ran)
	tios, err := unix.IoctlGetTermios(int(p.tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tios.Lflag |= unix.TOSTOP
	if err := unix.IoctlSetTermios(int(p.tty.Fd()), unix.TCSETS, tios); err != nil {
		t.Fatal(err)
	}
	p.waitOutput(t, fmt.Sprintf("[jobshell: exit %d]", cmd.ExitBudget))
	time.Sleep(2 * time.Second)
	if _, err := os.Stat(ran); err == nil {
		t.Error("the child ran on after the budget")
	}
}

// A child that fails to exec (exec format error) after it was handed the
// terminal: lockctl takes the terminal back from its vanished group, or the
// rest of the script was stopped by SIGTTIN when it read the terminal.
func TestRunExecFailureGivesTerminalBack(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "noshebang")
	if err := os.WriteFile(bad, []byte("echo hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := startProgOnTTY(t, testEnv(srv.URL()), "sh", "-c", `lockctl run order-demo-001 --budget 10s -- "$1"; echo "rc=$?"; read y; echo "sh got $y"`, "sh", bad)
	p.waitOutput(t, fmt.Sprintf("rc=%d", cmd.ExitCannotRun))
	time.Sleep(100 * time.Millisecond)
	p.typ(t, "after\n")
	p.waitOutput(t, "sh got after")
	p.wantExit(t, 0)
}

// Stopped past both the lease and the budget: on fg the exit is 124, every
// time. The Keeper's two timers fired at once and it picked one at random
// (and lockctl looked before or after it did): 76 three times in four.
func TestRunCtrlZPastTheBudget(t *testing.T) {
	srv := redistest.Start(t)
	for i := range 4 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			// A 2s lease: a 1s one ran out, beside two CPU burners, before
			// the child printed (the watchdog rightly killed it).
			p, _ := startInJob(t, srv.URL(), "run", "order-demo-00"+strconv.Itoa(i), "--budget", "3s", "--lease-cap", "2s", "--grace", "200ms",
				"--", "sh", "-c", `echo ready; sleep 10`)
			p.waitOutput(t, "ready")
			time.Sleep(200 * time.Millisecond) // see TestRunBgThenFg: sh forking sleep
			p.typ(t, "\x1a")
			p.waitOutput(t, "[jobshell: stopped]")
			time.Sleep(3500 * time.Millisecond) // past the lease and the budget
			p.typ(t, "fg\n")
			p.waitOutput(t, "[jobshell: exit ")
			p.mu.Lock()
			defer p.mu.Unlock()
			if want := fmt.Sprintf("[jobshell: exit %d]", cmd.ExitBudget); !strings.Contains(p.out.String(), want) {
				t.Errorf("want %s: %q", want, p.out.String())
			}
		})
	}
}
