//go:build linux

package cmd_test

import (
	"bytes"
	"context"
	"errors"
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
)

// ttyProc is `lockctl run` on a pseudo-terminal, as an interactive shell
// would start it: lockctl leads the terminal's foreground process group.
type ttyProc struct {
	*exec.Cmd
	tty *os.File // the terminal's other end: what is written is typed
	mu  sync.Mutex
	out bytes.Buffer // everything the terminal showed
}

func startOnTTY(t *testing.T, url string, args ...string) *ttyProc {
	t.Helper()
	return startOnTTYEnv(t, []string{"LOCKCTL_REDIS_URL=" + url, "NO_COLOR=1"}, args...)
}

// startOnTTYEnv is startOnTTY with env added to this process's environment
// (HOME and XDG_CONFIG_HOME are set to an empty directory).
func startOnTTYEnv(t *testing.T, env []string, args ...string) *ttyProc {
	t.Helper()
	p := &ttyProc{Cmd: exec.Command("lockctl", args...)}
	home := t.TempDir()
	p.Env = append(append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home), env...)
	// pty.Start makes the terminal lockctl's controlling terminal (a new
	// session), so lockctl's group is its foreground group.
	tty, err := pty.Start(p.Cmd)
	if err != nil {
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

func (p *ttyProc) exit(t *testing.T) int {
	t.Helper()
	err := p.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return p.ProcessState.ExitCode()
}

// processState is the state letter of pid in /proc ('T': stopped).
func processState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
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

// readLine is a child that reads a line from the terminal: before, it was
// started in a background process group and stopped by SIGTTIN, while
// lockctl renewed the lock for it.
const readLine = `echo $$ > "$1"; echo ready; read x; echo "got $x"; echo "$x" > "$2"`

func TestRunChildReadsTheTerminal(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	p := startOnTTY(t, srv.URL(), "run", "order-demo-001", "--budget", "10s", "--", "sh", "-c", readLine, "sh", filepath.Join(dir, "pid"), filepath.Join(dir, "line"))
	p.waitOutput(t, "ready")
	if _, err := io.WriteString(p.tty, "hello\n"); err != nil {
		t.Fatal(err)
	}
	p.waitOutput(t, "got hello")
	if code := p.exit(t); code != 0 {
		t.Errorf("exit %d: %s", code, p.out.String())
	}
}

// Ctrl-Z stops the child and lockctl (renewals stop too); continued while
// the lease can still be proven, the child goes on with the terminal.
func TestRunCtrlZ(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	p := startOnTTY(t, srv.URL(), "run", "order-demo-001", "--budget", "30s", "--", "sh", "-c", readLine, "sh", filepath.Join(dir, "pid"), filepath.Join(dir, "line"))
	child := readPID(t, filepath.Join(dir, "pid"))
	p.waitOutput(t, "ready")
	if _, err := io.WriteString(p.tty, "\x1a"); err != nil { // Ctrl-Z
		t.Fatal(err)
	}
	waitState(t, p.Process.Pid, 'T')
	if s := processState(child); s != 'T' {
		t.Fatalf("lockctl stopped, the child is in state %q", s)
	}
	if err := p.Process.Signal(syscall.SIGCONT); err != nil { // fg
		t.Fatal(err)
	}
	if _, err := io.WriteString(p.tty, "hello\n"); err != nil {
		t.Fatal(err)
	}
	p.waitOutput(t, "got hello")
	if code := p.exit(t); code != 0 {
		t.Errorf("exit %d: %s", code, p.out.String())
	}
	if srv.Client(t).Exists(context.Background(), "lock:OrderId:order-demo-001").Val() != 0 {
		t.Error("lock not released")
	}
}

// Stopped for longer than the lease: on SIGCONT the child is killed
// without running another instruction, and lockctl exits 76.
func TestRunCtrlZPastTheLease(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	p := startOnTTY(t, srv.URL(), "run", "order-demo-001", "--budget", "30s", "--lease-cap", "1s", "--grace", "200ms",
		"--", "sh", "-c", readLine, "sh", filepath.Join(dir, "pid"), filepath.Join(dir, "line"))
	child := readPID(t, filepath.Join(dir, "pid"))
	p.waitOutput(t, "ready")
	if _, err := io.WriteString(p.tty, "\x1a"); err != nil {
		t.Fatal(err)
	}
	waitState(t, p.Process.Pid, 'T')
	// Typed while stopped: a child that went on would read it.
	if _, err := io.WriteString(p.tty, "late\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the 1s lease expires in Redis
	if err := p.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if code := p.exit(t); code != cmd.ExitLeaseLost {
		t.Errorf("exit %d, want %d: %s", code, cmd.ExitLeaseLost, p.out.String())
	}
	p.waitOutput(t, "the command was killed without being continued")
	if _, err := os.Stat(filepath.Join(dir, "line")); err == nil {
		t.Error("the child ran after the lease was lost")
	}
	if alive(child) {
		t.Error("the child is still there")
	}
}

// Styled output on a terminal sends no query to it: adaptive colours asked
// for the background (OSC 11, then a cursor report) and waited 5s for an
// answer that a pty without a terminal emulator never gives.
func TestNoTerminalQueries(t *testing.T) {
	for _, args := range [][]string{{"simulate", "stale-writer"}, {"lease", "--budget", "1200s"}} {
		p := startOnTTYEnv(t, []string{"TERM=xterm-256color", "NO_COLOR=", "COLORTERM=", "CI="}, args...)
		if code := p.exit(t); code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		p.mu.Lock()
		out := p.out.String()
		p.mu.Unlock()
		if !strings.Contains(out, "\x1b[") {
			t.Errorf("%v: no colour on a terminal: %q", args, out)
		}
		if strings.Contains(out, "\x1b]11;") || strings.Contains(out, "\x1b[6n") {
			t.Errorf("%v: queried the terminal: %q", args, out)
		}
	}
}
