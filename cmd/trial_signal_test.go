//go:build linux

package cmd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTrialInterrupt: Ctrl-C during a pause continues the paused worker,
// stops every worker, prints the partial verdict and exits 130.
func TestTrialInterrupt(t *testing.T) {
	t.Parallel()
	pids := filepath.Join(t.TempDir(), "pids")
	worker, err := filepath.Abs("../testdata/trial/unfenced.sh")
	if err != nil {
		t.Fatal(err)
	}
	p := startLockctl(t, "redis://127.0.0.1:1/0", "trial", "--duration", "1m", "--fault-duration", "30s", "--nemesis", "pause",
		"--seed", "1", "--workers", "2", "--", "sh", "-c", `echo $$ >> "$0"; exec "$1"`, pids, worker)
	stopped := ""
	for deadline := time.Now().Add(10 * time.Second); stopped == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, pid := range readPids(t, pids) {
			if procState(pid) == "T" {
				stopped = pid
			}
		}
	}
	if stopped == "" {
		t.Fatalf("no worker was paused in 10s; stderr: %s", p.stderr.String())
	}
	if err := p.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := p.exit(t); code != 130 {
		t.Fatalf("exit %d, want 130; stderr: %s", code, p.stderr.String())
	}
	if !strings.Contains(p.stdout.String(), "verdict: ") || !strings.Contains(p.stdout.String(), "note: interrupted") {
		t.Errorf("no partial verdict:\n%s", p.stdout.String())
	}
	if !strings.Contains(p.stderr.String(), "lockctl: interrupted") {
		t.Errorf("stderr: %s", p.stderr.String())
	}
	for _, pid := range readPids(t, pids) {
		if st := procState(pid); st != "" && st != "Z" {
			t.Errorf("worker %s still there (state %s) after lockctl exited", pid, st)
		}
	}
}

func readPids(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// procState is the state letter of pid in /proc (R, S, T, Z, ...), "" when gone.
func procState(pid string) string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return ""
}
