package supervise

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A watchdog woken past both its SIGTERM and its SIGKILL time (started
// late, or starved) finds both timers ready and its select takes them in
// either order. Taken SIGKILL first, the SIGTERM after it cleared late: the
// group that lockctl, stopped before its fork past the lease, started
// later was found by seek and kept, not killed, and ran on past the lease
// (TestWatchdogSeekKillsALateGroup failed 8 of 20 runs under load).
func TestWatchdogSIGTERMAfterSIGKILLStaysLate(t *testing.T) {
	t.Parallel()
	// The stand-in for lockctl: it starts its child's group when told.
	lockctl := exec.Command("sh", "-c", `read x; setsid sleep 60 & echo $!; wait`)
	in, err := lockctl.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := lockctl.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := lockctl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lockctl.Process.Kill(); _ = lockctl.Wait() })
	s := watchdogState{parent: lockctl.Process.Pid, kill: 1}
	s.signal(syscall.SIGKILL) // no group yet
	s.signal(syscall.SIGTERM)
	fmt.Fprintln(in, "go")
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	seek := time.NewTicker(time.Hour)
	defer seek.Stop()
	// Until setsid has made it a group leader seek finds nothing; 10s only bounds a hang.
	for end := time.Now().Add(10 * time.Second); s.pgid == 0; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("seek never found the child's group")
		}
		s.seek()
	}
	if s.pgid != child {
		t.Fatalf("seek found group %d, the child is %d", s.pgid, child)
	}
	// SIGKILL is sent before seek returns: the child is dead or dying now.
	for end := time.Now().Add(10 * time.Second); running(child); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the group found after the SIGKILL time was kept, not killed")
		}
	}
}

// running reports whether pid exists and is not a zombie (proc(5)).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}
