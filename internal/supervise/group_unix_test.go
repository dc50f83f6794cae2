//go:build linux

package supervise_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/supervise"
)

// state is the state letter of pid in /proc/PID/stat (proc(5)).
func state(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return f[0][0]
}

// waitFor waits up to 5s for pid to reach state want.
func waitFor(t *testing.T, pid int, want byte) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if state(pid) == want {
			return
		}
	}
	t.Fatalf("pid %d in state %c, want %c", pid, state(pid), want)
}

// The group primitives reach a helper the child started, not only the child.
func TestGroupPauseContinueKill(t *testing.T) {
	t.Parallel()
	c := exec.Command("sh", "-c", "sleep 60 & echo $!; wait")
	c.SysProcAttr = supervise.GroupAttr()
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = supervise.KillGroup(c.Process); _ = c.Wait() })
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	helper, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("helper pid %q: %v", buf[:n], err)
	}
	if err := supervise.PauseGroup(c.Process); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c.Process.Pid, 'T')
	waitFor(t, helper, 'T')
	if err := supervise.ContinueGroup(c.Process); err != nil {
		t.Fatal(err)
	}
	waitFor(t, helper, 'S')
	if err := supervise.KillGroup(c.Process); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	if code := supervise.ExitCode(c.ProcessState); code != 128+9 {
		t.Errorf("exit code %d, want 137 (SIGKILL)", code)
	}
	for end := time.Now().Add(5 * time.Second); state(helper) != 0 && state(helper) != 'Z'; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("helper %d still in state %c after KillGroup", helper, state(helper))
		}
	}
}
