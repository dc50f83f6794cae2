//go:build linux

package cmd_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockctl/lockctl/internal/supervise"
)

// startWatchdogOf starts the watchdog of parent, as run does, and returns
// the pipe lockctl would write its lines to (closing it is lockctl's end).
func startWatchdogOf(t *testing.T, parent int) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	wd := exec.Command("lockctl", supervise.WatchdogArg, strconv.Itoa(parent))
	wd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := wd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := wd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = wd.Process.Kill()
		_ = wd.Wait()
	})
	return wd, in
}

// startIdle starts a process that sleeps and has no child: the stand-in
// for a lockctl stopped before it starts its child.
func startIdle(t *testing.T, script string, args ...string) *exec.Cmd {
	t.Helper()
	c := exec.Command("sh", append([]string{"-c", script, "sh"}, args...)...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Process.Kill()
		_ = c.Wait()
	})
	return c
}

func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// cpuTime is the CPU time pid has used (user and system), from
// /proc/PID/stat.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ut, _ := strconv.Atoi(f[11])
	st, _ := strconv.Atoi(f[12])
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// A lockctl stopped after its deadline line but before it starts its
// child leaves the watchdog seeking a group that does not come yet. It
// used to read all of /proc every 2ms for as long as lockctl stayed
// stopped: a core's worth of CPU, for ever if nobody resumed lockctl, and
// taken from a lockctl starved of CPU.
func TestWatchdogSeekCostsLittle(t *testing.T) {
	lockctl := startIdle(t, "exec sleep 60")
	wd, in := startWatchdogOf(t, lockctl.Process.Pid)
	now := monoNow()
	fmt.Fprintf(in, "until %d %d\n", now+int64(time.Minute), now+int64(2*time.Minute))
	const wait = 3 * time.Second
	time.Sleep(wait)
	if used := cpuTime(t, wd.Process.Pid); used > wait/5 {
		t.Errorf("the watchdog used %v of CPU in %v seeking a child not started yet, want at most %v", used, wait, wait/5)
	}
}

// A lockctl stopped before its child's start past the SIGKILL time, then
// resumed only to start the child and stop again before the watch line:
// the child runs after the lease. The watchdog that finds its group must
// SIGKILL it then, as it would at the watch line; it kept it for later.
func TestWatchdogSeekKillsALateGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile, goFile := filepath.Join(dir, "pid"), filepath.Join(dir, "go")
	// setsid makes its sleep lead its own group, as run's child does.
	lockctl := startIdle(t, `while [ ! -e "$1" ]; do sleep 0.01; done; setsid sleep 60 & echo $! > "$2"; wait`, goFile, pidFile)
	_, in := startWatchdogOf(t, lockctl.Process.Pid)
	now := monoNow()
	fmt.Fprintf(in, "until %d %d\n", now+int64(20*time.Millisecond), now+int64(50*time.Millisecond))
	time.Sleep(300 * time.Millisecond) // both deadlines pass: no group to signal yet
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	child := readPID(t, pidFile)
	// Found within a seek (100ms), killed at once; 10s only bounds a child
	// kept alive (it sleeps 60s), however slowly a loaded machine seeks.
	for deadline := time.Now().Add(10 * time.Second); alive(child); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(child, syscall.SIGKILL)
			t.Fatal("the group started after the SIGKILL time ran on once the watchdog had found it")
		}
	}
	_ = in.Close()
}
