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
