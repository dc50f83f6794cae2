//go:build linux

package cmd_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redistest"
)

// TestSecondSignalEndsABlockedWrite: `inspect -o json` writing to a pipe
// nobody reads is stuck in write(2), which its first SIGTERM cannot end
// (no context ends a blocked write); a second SIGTERM ends it at once,
// exit 143, as Ctrl-C twice ends a command whose terminal is held.
func TestSecondSignalEndsABlockedWrite(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	pipe := c.Pipeline()
	for i := range 2000 { // about 1 MB of JSON: far more than a pipe holds
		pipe.Set(bg, fmt.Sprintf("lock:blocked:%d", i), fmt.Sprintf("%032x", i), time.Minute)
	}
	if _, err := pipe.Exec(bg); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close() // open and never read: the writer blocks once the pipe is full
	var stderr bytes.Buffer
	home := t.TempDir()
	lc := exec.Command("lockctl", "inspect", "--pattern", "lock:blocked:*", "-o", "json")
	lc.Env = append(os.Environ(), "LOCKCTL_REDIS_URL="+srv.URL(), "HOME="+home, "XDG_CONFIG_HOME="+home, "NO_COLOR=1")
	lc.Stdout, lc.Stderr = w, &stderr
	if err := lc.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() {
		if lc.ProcessState == nil {
			_ = lc.Process.Kill()
			_ = lc.Wait()
		}
	})
	for deadline := time.Now().Add(30 * time.Second); !blockedInPipeWrite(lc.Process.Pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("lockctl never blocked writing to the pipe; stderr %s", stderr.String())
		}
	}
	_ = lc.Process.Signal(syscall.SIGTERM)
	time.Sleep(time.Second) // the first signal's clean-up: its write stays blocked
	_ = lc.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- lc.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("lockctl still running 10s after a second SIGTERM; stderr %s", stderr.String())
	}
	if code := lc.ProcessState.ExitCode(); code != 143 {
		t.Errorf("exit %d after SIGTERM twice, want 143; stderr %s", code, stderr.String())
	}
}

// blockedInPipeWrite reports whether a thread of process pid sleeps in
// the kernel's pipe_write (anon_pipe_write since Linux 6.x): its output
// pipe is full.
func blockedInPipeWrite(pid int) bool {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", pid))
	for _, f := range tasks {
		if b, err := os.ReadFile(f); err == nil && strings.HasSuffix(strings.TrimSpace(string(b)), "pipe_write") {
			return true
		}
	}
	return false
}
