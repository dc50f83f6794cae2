//go:build unix

package cmd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreHandOver builds lockctl as released, which does not link the
// SQL drivers, and lockctl-store beside it: `trial --cleanup --store
// sqlite:DIR` runs in lockctl-store. Without it, trial and diagnose given
// --store say so in one line naming it, with exit 127, before connecting
// anywhere.
func TestStoreHandOver(t *testing.T) {
	t.Parallel()
	bin := releasedWith(t, "lockctl-store")
	home := t.TempDir()
	env := append(os.Environ(), "PATH="+home, "HOME="+home, "XDG_CONFIG_HOME="+home, "LOCKCTL_REDIS_URL=redis://127.0.0.1:1/0")
	c := exec.Command(filepath.Join(bin, "lockctl"), "trial", "--cleanup", "--store", "sqlite:"+t.TempDir())
	c.Env = env
	if out, err := c.CombinedOutput(); err != nil || !strings.Contains(string(out), "nothing to drop") {
		t.Errorf("lockctl trial --cleanup --store beside lockctl-store: %v, %q; want exit 0, nothing to drop", err, out)
	}

	// A trusted lockctl.yaml in the working directory is named once, by
	// lockctl, not again by lockctl-store; the hand-over's mark does not
	// reach the workers, which get the scratch database.
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "lockctl.yaml"), []byte("output: json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	trust := exec.Command(filepath.Join(bin, "lockctl"), "config", "trust")
	trust.Dir, trust.Env = work, env
	if out, err := trust.CombinedOutput(); err != nil {
		t.Fatalf("lockctl config trust: %v\n%s", err, out)
	}
	envFile := filepath.Join(work, "worker.env")
	c = exec.Command(filepath.Join(bin, "lockctl"), "trial", "--store", "sqlite:"+t.TempDir(), "--duration", "1s", "--grace", "1s",
		"--nemesis", "none", "--workers", "1", "--", "sh", "-c", "env >> "+envFile+"; sleep 3")
	c.Dir, c.Env = work, append(env, "PATH="+os.Getenv("PATH"))
	out, _ := c.CombinedOutput()
	workerEnv, _ := os.ReadFile(envFile)
	if n := strings.Count(string(out), "using lockctl.yaml from the current directory"); n != 1 {
		t.Errorf("trial --store through lockctl-store named the config file %d times, want 1:\n%s", n, out)
	}
	if !strings.Contains(string(workerEnv), "DATABASE_URL=sqlite:") || strings.Contains(string(workerEnv), "LOCKCTL_HANDED_OVER") {
		t.Errorf("the worker's environment: want DATABASE_URL, no LOCKCTL_HANDED_OVER:\n%s", workerEnv)
	}

	alone := t.TempDir()
	if err := os.Link(filepath.Join(bin, "lockctl"), filepath.Join(alone, "lockctl")); err != nil {
		t.Fatal(err)
	}
	for what, args := range map[string][]string{
		"trial --store":    {"trial", "--cleanup", "--store", "sqlite:" + t.TempDir()},
		"diagnose --store": {"diagnose", "order-1", "--store", "sqlite:" + filepath.Join(home, "app.db"), "--fence-query", "SELECT max(fence) FROM ledger"},
	} {
		c := exec.Command(filepath.Join(alone, "lockctl"), args...)
		c.Env = env
		out, err := c.CombinedOutput()
		if c.ProcessState.ExitCode() != 127 || !strings.HasPrefix(string(out), "lockctl: "+what+": lockctl-store is not beside") || strings.Count(string(out), "\n") != 1 {
			t.Errorf("lockctl %s without lockctl-store: %v, %q; want exit 127 and one line naming it", what, err, out)
		}
	}
}

// releasedWith returns a directory holding lockctl built as released
// (releasedLockctl) and the companion binary built beside it.
func releasedWith(t *testing.T, companion string) string {
	t.Helper()
	bin := t.TempDir()
	if err := os.Link(releasedLockctl(t), filepath.Join(bin, "lockctl")); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("go", "build", "-o", filepath.Join(bin, companion), "../"+companion).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", companion, err, b)
	}
	return bin
}
