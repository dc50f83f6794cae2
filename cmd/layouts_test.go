package cmd_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redistest"
)

// A layouts file with a mistake stops inspect and watch before they reach
// Redis: exit 2, one line naming the file, the line and what is accepted.
func TestDeclaredLayoutsFileErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "layouts.yaml")
	if err := os.WriteFile(bad, []byte("layouts:\n  - name: x\n    key: \"a:*\"\n    value: '(?P<who>.+)'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		bad:                                bad + `:4: layouts[0]: value: named group "who"; accepted: owner, fence, holder, acquired_at`,
		filepath.Join(dir, "missing.yaml"): "LOCKCTL_INSPECT_LAYOUTS: cannot read the layouts file",
	} {
		for _, command := range []string{"inspect", "watch"} {
			code, _, errOut := runEnv(t, []string{"LOCKCTL_INSPECT_LAYOUTS=" + file}, command, "--key", "x", "--redis", "redis://127.0.0.1:1/0")
			first, _, _ := strings.Cut(errOut, "\n")
			if code != 2 || !strings.Contains(first, want) {
				t.Errorf("%s with %s: exit %d, stderr %q, want 2 and %q", command, file, code, errOut, want)
			}
		}
	}
}

// watch --pattern reads keys with the declared layouts too, and a relative
// inspect.layouts in a config file is read beside that file.
func TestDeclaredLayoutsInWatchPattern(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	if err := srv.Client(t).Set(context.Background(), "billing:lock:{inv-9}", "8|worker-3|9f2c", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	layouts := "layouts:\n  - name: billing-lock\n    key: \"billing:lock:*\"\n    value: '(?P<fence>\\d+)\\|(?P<holder>[^|]+)\\|(?P<owner>[0-9a-f]+)'\n"
	config := filepath.Join(dir, "lockctl.yaml")
	for name, text := range map[string]string{"billing.yaml": layouts, "lockctl.yaml": "inspect:\n  layouts: billing.yaml\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runEnv(t, nil, "--config", config, "watch", "--pattern", "billing:*", "--duration", "300ms", "--interval", "100ms", "-o", "jsonl", "--redis", srv.URL())
	if code != 0 || !strings.Contains(out, `"owner":"9f2c"`) {
		t.Errorf("exit %d, stdout %q, stderr %q: want 0 and the owner the layout's group names", code, out, errOut)
	}
}
