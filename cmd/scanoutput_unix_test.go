//go:build unix

package cmd_test

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redistest"
)

// SIGTERM while inspect --pattern -o yaml writes its document ends it at
// the next lock (yaml went on for 119 s after it over 1M keys): the
// document is closed, marked interrupted, with fewer locks than it had,
// and lockctl exits 143.
func TestScanOutputStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	fillLocks(t, srv.Client(t), "lock", 30000)
	c := exec.Command("lockctl", "inspect", "--pattern", "lock:*", "-o", "yaml")
	home := t.TempDir()
	c.Env = append(os.Environ(), "LOCKCTL_REDIS_URL="+srv.URL(), "HOME="+home, "XDG_CONFIG_HOME="+home, "NO_COLOR=1")
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Process.Kill() }()
	first := make([]byte, 1)
	if _, err := io.ReadFull(out, first); err != nil { // the scan is over: the document has begun
		t.Fatalf("no output: %v; %s", err, stderr.String())
	}
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	rest, _ := io.ReadAll(out)
	_ = c.Wait()
	t.Logf("ended %s after SIGTERM", time.Since(sent))
	doc := string(first) + string(rest)
	n := strings.Count(doc, "\n  - key: lock:")
	if code := c.ProcessState.ExitCode(); code != 143 || n >= 30000 || !strings.HasSuffix(doc, "  interrupted: true\n") {
		t.Errorf("exit %d (want 143), %d of 30000 locks written, document ends %q: want it closed early, marked interrupted; stderr %s",
			code, n, doc[max(0, len(doc)-200):], stderr.String())
	}
}
