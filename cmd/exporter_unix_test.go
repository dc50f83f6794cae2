//go:build unix

package cmd_test

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redistest"
)

// TestExporterSIGTERM runs the tests' lockctl (exporter linked): it serves
// lockctl_up 1 on the address it names, and SIGTERM stops it with exit 0.
func TestExporterSIGTERM(t *testing.T) {
	t.Parallel()
	exporterUntilSIGTERM(t, "lockctl")
}

// TestExporterHandOver builds lockctl as released, which does not link the
// Prometheus client, and lockctl-exporter beside it: lockctl exporter runs
// the latter (same process, so SIGTERM still stops it with exit 0); without
// it, one line and exit 127.
func TestExporterHandOver(t *testing.T) {
	t.Parallel()
	bin := releasedWith(t, "lockctl-exporter")
	exporterUntilSIGTERM(t, filepath.Join(bin, "lockctl"))

	alone := t.TempDir()
	if err := os.Link(filepath.Join(bin, "lockctl"), filepath.Join(alone, "lockctl")); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(filepath.Join(alone, "lockctl"), "exporter", "--listen", "127.0.0.1:0")
	c.Env = append(os.Environ(), "PATH="+alone, "HOME="+alone, "XDG_CONFIG_HOME="+alone)
	out, err := c.CombinedOutput()
	if c.ProcessState.ExitCode() != 127 || !strings.Contains(string(out), "lockctl-exporter is not beside") || strings.Count(string(out), "\n") != 1 {
		t.Errorf("lockctl exporter without lockctl-exporter: %v, %q; want exit 127 and one line naming it", err, out)
	}
}

// exporterUntilSIGTERM runs `lockctl exporter` from bin over a server of
// its own until it serves lockctl_up 1, then stops it with SIGTERM.
func exporterUntilSIGTERM(t *testing.T, bin string) {
	srv := redistest.Start(t)
	home := t.TempDir()
	c := exec.Command(bin, "exporter", "--listen", "127.0.0.1:0", "--interval", "100ms")
	c.Env = append(os.Environ(), "LOCKCTL_REDIS_URL="+srv.URL(), "HOME="+home, "XDG_CONFIG_HOME="+home)
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.ProcessState == nil {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	lines := bufio.NewReader(stderr)
	first, err := lines.ReadString('\n')
	if err != nil {
		t.Fatalf("exporter's first line: %q, %v", first, err)
	}
	m := regexp.MustCompile(`serving (http://\S+/metrics)`).FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("first line %q names no address", first)
	}
	deadline := time.Now().Add(30 * time.Second)
	for body := ""; !strings.Contains(body, "\nlockctl_up 1\n"); {
		if time.Now().After(deadline) {
			t.Fatalf("no lockctl_up 1 at %s after 30s:\n%s", m[1], body)
		}
		time.Sleep(100 * time.Millisecond)
		if resp, err := http.Get(m[1]); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
		}
	}
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(lines)
	if err := c.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v, want exit 0; stderr:\n%s%s", err, first, rest)
	}
	if !strings.Contains(string(rest), "lockctl: exporter: stopped") {
		t.Errorf("stderr after SIGTERM = %q, want the stopped line", rest)
	}
}
