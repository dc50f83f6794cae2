package cmd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReferenceUpToDate fails when docs/reference differs from what
// `lockctl docs markdown` generates now. Fix: go run . docs markdown --dir docs/reference
func TestReferenceUpToDate(t *testing.T) {
	t.Parallel()
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

// TestManPagesKeepText: the man pages say what --help says. cobra/doc
// renders help texts as Markdown, which dropped "<user config dir>" and
// "{<lock key>}" as HTML tags and took the stars of "*VALUE*" for emphasis.
func TestManPagesKeepText(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := exec.Command("lockctl", "docs", "man", "--dir", dir)
	c.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("lockctl docs man: %v\n%s", err, out)
	}
	for page, texts := range map[string][]string{
		"lockctl.1":             {"<user config dir>/lockctl/config.yaml"},
		"lockctl-config-view.1": {"LOCKCTL_* environment variable", "Passwords are shown as ***", "An empty LOCKCTL_*"},
		"lockctl-inspect.1":     {"(default {<lock key>}:fence)", "(SCAN MATCH *VALUE*)"},
		"lockctl-simulate.1":    {`"lockctl:sim:{<random>}:"`},
		// An indented table stays one row a line (.EX), not reflowed.
		"lockctl-watch.1": {".EX\n  HELD / FREE          the state at the first sample\n  ACQUIRED "},
	} {
		b, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil {
			t.Fatal(err)
		}
		// md2man writes a hyphen as \- and a star in running text may be \*.
		roff := strings.NewReplacer(`\-`, "-", `\*`, "*", `\(rs`, `\`, `\e`, `\`).Replace(string(b))
		for _, want := range texts {
			if !strings.Contains(roff, want) {
				t.Errorf("%s lacks %q", page, want)
			}
		}
	}
}

// TestReferenceKeepsText: the Markdown reference's prose escapes what
// Markdown would hide ("{<random>}" as an HTML tag) and keeps indented
// tables as code, as the man pages do.
func TestReferenceKeepsText(t *testing.T) {
	t.Parallel()
	for page, texts := range map[string][]string{
		"lockctl_simulate.md":    {`"lockctl:sim:{\<random\>}:"`, `LOCKCTL\_POLICY\_\* or the config file's policy.\* keys`},
		"lockctl_config_view.md": {`else \<user config dir\>/lockctl/config.yaml`},
		"lockctl_lease.md":       {"\n```\n  ordinary call (HTTP, script):"},
	} {
		b, err := os.ReadFile(filepath.Join("..", "docs", "reference", page))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range texts {
			if !strings.Contains(string(b), want) {
				t.Errorf("docs/reference/%s lacks %q", page, want)
			}
		}
	}
}
