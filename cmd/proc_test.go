package cmd_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

// proc is the real lockctl binary (testscript's RunMain puts it on PATH)
// started against a real redis-server, with its output captured.
type proc struct {
	*exec.Cmd
	stdout, stderr bytes.Buffer
}

// startLockctl starts `lockctl args...` against the server at url.
func startLockctl(t *testing.T, url string, args ...string) *proc {
	t.Helper()
	return startProc(t, url, exec.Command("lockctl", args...))
}

// startProc starts c (which runs lockctl) against the server at url.
func startProc(t *testing.T, url string, c *exec.Cmd) *proc {
	t.Helper()
	p := &proc{Cmd: c}
	home := t.TempDir()
	p.Env = append(os.Environ(), "LOCKCTL_REDIS_URL="+url, "HOME="+home, "XDG_CONFIG_HOME="+home, "NO_COLOR=1")
	p.Stdout, p.Stderr = &p.stdout, &p.stderr
	p.WaitDelay = 3 * time.Second
	detach(p.Cmd)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.ProcessState == nil {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	})
	return p
}

// exit waits for lockctl and returns its exit code.
func (p *proc) exit(t *testing.T) int {
	t.Helper()
	err := p.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("lockctl: %v", err)
	}
	return p.ProcessState.ExitCode()
}

func runLockctl(t *testing.T, url string, args ...string) (*proc, int) {
	t.Helper()
	p := startLockctl(t, url, args...)
	return p, p.exit(t)
}
