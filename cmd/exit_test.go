package cmd_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redistest"
)

// TestExitCodes asserts every documented exit code of docs/exit-codes.md once, through the real binary.
func TestExitCodes(t *testing.T) {
	s := redistest.Start(t)
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"ok", []string{"lease", "--budget", "1200s"}, 0},
		{"check failed", []string{"simulate", "stale-writer", "--fencing=false", "--expect", "safe"}, 1},
		{"usage", []string{"lease", "--budget", "1200"}, 2},
		{"redis unreachable", []string{"inspect", "order-demo-001", "--redis", "redis://127.0.0.1:1/0"}, 3},
	}
	for _, c := range cases {
		p, code := runLockctl(t, s.URL(), c.args...)
		if code != c.code {
			t.Errorf("%s: lockctl %s exited %d, want %d\nstderr: %s", c.name, strings.Join(c.args, " "), code, c.code, p.stderr.String())
		}
		if strings.Contains(p.stderr.String(), "goroutine ") {
			t.Errorf("%s: stack trace on stderr", c.name)
		}
	}

	// 130: interrupted by Ctrl-C (SIGINT) while watching.
	p := startLockctl(t, s.URL(), "watch", "order-demo-001", "--duration", "1m")
	time.Sleep(500 * time.Millisecond)
	if err := p.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.exit(t); code != 130 {
		t.Errorf("watch interrupted: exit %d, want 130\nstderr: %s", code, p.stderr.String())
	}
}
