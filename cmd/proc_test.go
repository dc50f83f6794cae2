package cmd_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// proc is the real lockctl binary (testscript's RunMain puts it on PATH)
// started against a real redis-server, with its output captured.
type proc struct {
	*exec.Cmd
	stdout, stderr bytes.Buffer
}

// released is lockctl built as released (no -race, no test harness), once
// per test run, in a directory TestMain removes.
var released struct {
	once      sync.Once
	dir, path string
	err       error
}

// releasedLockctl returns the path of lockctl built as released. The
// memory tests measure it: the race detector's own memory grows with the
// machine's load (inspect -o yaml over 30,000 locks: 120-250 MB with
// -race, 44 MB released), and the release is what users run.
func releasedLockctl(t *testing.T) string {
	t.Helper()
	released.once.Do(func() {
		if released.dir, released.err = os.MkdirTemp("", "lockctl-released-"); released.err != nil {
			return
		}
		path := filepath.Join(released.dir, "lockctl")
		if b, err := exec.Command("go", "build", "-o", path, "..").CombinedOutput(); err != nil {
			released.err = errors.New("go build: " + err.Error() + "\n" + string(b))
			return
		}
		released.path = path
	})
	if released.err != nil {
		t.Fatal(released.err)
	}
	return released.path
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
