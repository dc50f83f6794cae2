package cmd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestReferenceUpToDate fails when docs/reference differs from what
// `lockctl docs markdown` generates now. Fix: go run . docs markdown --dir docs/reference
func TestReferenceUpToDate(t *testing.T) {
	dir := t.TempDir()
	c := exec.Command("lockctl", "docs", "markdown", "--dir", dir)
	c.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("lockctl docs markdown: %v\n%s", err, out)
	}
	want, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	have, _ := filepath.Glob(filepath.Join("..", "docs", "reference", "*.md"))
	if len(want) != len(have) {
		t.Errorf("docs/reference has %d files, lockctl generates %d; run: go run . docs markdown --dir docs/reference", len(have), len(want))
	}
	for _, w := range want {
		gen, _ := os.ReadFile(w)
		cur, err := os.ReadFile(filepath.Join("..", "docs", "reference", filepath.Base(w)))
		if err != nil || string(gen) != string(cur) {
			t.Errorf("docs/reference/%s is out of date; run: go run . docs markdown --dir docs/reference", filepath.Base(w))
		}
	}
}
