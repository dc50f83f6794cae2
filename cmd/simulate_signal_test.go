//go:build unix

package cmd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// slowScenario renews every 10ms for two hours: one schedule is 720,000
// renewals, an exploration of it minutes.
const slowScenario = `name: slow
policy: {lease: 30s, renew_every: 10ms}
events:
  - {at: 0s, actor: A, do: acquire}
  - {at: 0s, actor: A, do: work, for: 2h}
  - {at: 1s, actor: A, do: pause, for: 1s}
  - {at: 5s, actor: B, do: acquire, wait: 2h}
`

// Ctrl-C and SIGTERM stop an exploration at once with the documented exit
// code, in a grid (its first check came at the 4096th schedule) and in a
// random exploration of fewer than 4096 runs (it had none).
func TestSimulateExploreSignals(t *testing.T) {
	file := filepath.Join(t.TempDir(), "slow.yaml")
	if err := os.WriteFile(file, []byte(slowScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
		says string
		args []string
	}{
		{syscall.SIGINT, 130, "interrupted", []string{"--grid", "40"}},
		{syscall.SIGTERM, 143, "terminated", []string{"--grid", "40"}},
		{syscall.SIGINT, 130, "interrupted", []string{"--runs", "3000"}},
		{syscall.SIGTERM, 143, "terminated", []string{"--runs", "3000"}},
	} {
		args := append([]string{"simulate", "--file", file, "--explore"}, tc.args...)
		p := startProc(t, "", exec.Command("lockctl", args...))
		time.Sleep(500 * time.Millisecond)
		if err := p.Process.Signal(tc.sig); err != nil {
			t.Fatal(err)
		}
		// Unstopped, the exploration runs for about a minute.
		timer := time.AfterFunc(20*time.Second, func() { _ = p.Process.Kill() })
		code := p.exit(t)
		timer.Stop()
		if code != tc.code || p.stderr.String() != "lockctl: "+tc.says+"\n" || p.stdout.Len() != 0 {
			t.Errorf("%s during %v: exit %d (want %d), stderr %q, stdout %d bytes", tc.sig, tc.args, code, tc.code, p.stderr.String(), p.stdout.Len())
		}
	}
}
