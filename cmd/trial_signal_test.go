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
// stops every worker and the helpers they started in sessions of their
// own, prints the partial verdict and exits 130.
func TestTrialInterrupt(t *testing.T) {
	t.Parallel()
	pids := filepath.Join(t.TempDir(), "pids")
	worker, err := filepath.Abs("../testdata/trial/unfenced.sh")
	if err != nil {
		t.Fatal(err)
	}
	p := startLockctl(t, "redis://127.0.0.1:1/0", "trial", "--duration", "1m", "--fault-duration", "30s", "--nemesis", "pause",
		"--seed", "1", "--workers", "2", "--", "sh", "-c", `echo $$ >> "$0"; setsid sleep 3001 & echo $! >> "$0"; exec "$1"`, pids, worker)
	stopped := ""
	for deadline := time.Now().Add(10 * time.Second); stopped == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, pid := range readPids(t, pids) {
			if paused(pid) {
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
			t.Errorf("worker or helper %s still there (state %s) after lockctl exited", pid, st)
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

// paused reports whether pid is stopped (state T: SIGSTOP) or frozen in
// its cgroup v2 (cgroup.freeze, where a trial has cgroups; state S then).
func paused(pid string) bool {
	if procState(pid) == "T" {
		return true
	}
	b, _ := os.ReadFile("/proc/" + pid + "/cgroup")
	for _, l := range strings.Split(string(b), "\n") {
		if path, ok := strings.CutPrefix(l, "0::"); ok {
			for _, mount := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
				ev, _ := os.ReadFile(filepath.Join(mount, path, "cgroup.events"))
				if strings.Contains(string(ev), "frozen 1") {
					return true
				}
			}
		}
	}
	return false
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
