package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reference is the repository's copy of the Markdown reference.
var reference = filepath.Join("..", "..", "docs", "reference")

// TestReferenceUpToDate fails when docs/reference differs from what
// gendocs generates now. Fix: go run ./internal/gendocs markdown --dir docs/reference
func TestReferenceUpToDate(t *testing.T) {
	dir := t.TempDir()
	if err := run([]string{"markdown", "--dir", dir}, ""); err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	have, _ := filepath.Glob(filepath.Join(reference, "*.md"))
	if len(want) != len(have) {
		t.Errorf("docs/reference has %d files, gendocs generates %d; run: go run ./internal/gendocs markdown --dir docs/reference", len(have), len(want))
	}
	for _, w := range want {
		gen, _ := os.ReadFile(w)
		cur, err := os.ReadFile(filepath.Join(reference, filepath.Base(w)))
		if err != nil || string(gen) != string(cur) {
			t.Errorf("docs/reference/%s is out of date; run: go run ./internal/gendocs markdown --dir docs/reference", filepath.Base(w))
		}
	}
}

// TestManPagesKeepText: the man pages say what --help says. cobra/doc
// renders help texts as Markdown, which dropped "<user config dir>" and
// "{<lock key>}" as HTML tags and took the stars of "*VALUE*" for emphasis.
// The date is SOURCE_DATE_EPOCH's, and each page is titled by its command.
func TestManPagesKeepText(t *testing.T) {
	dir := t.TempDir()
	if err := run([]string{"man", "--dir", dir}, "0"); err != nil {
		t.Fatal(err)
	}
	for page, texts := range map[string][]string{
		"lockctl-lease.1":       {`.TH "LOCKCTL-LEASE" "1" "Jan 1970"`},
		"lockctl.1":             {"<user config dir>/lockctl/config.yaml", `.TH "LOCKCTL" "1"`},
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
	for page, texts := range map[string][]string{
		"lockctl_simulate.md":    {`"lockctl:sim:{\<random\>}:"`, `LOCKCTL\_POLICY\_\* or the config file's policy.\* keys`},
		"lockctl_config_view.md": {`else \<user config dir\>/lockctl/config.yaml`},
		"lockctl_lease.md":       {"\n```\n  ordinary call (HTTP, script):"},
	} {
		b, err := os.ReadFile(filepath.Join(reference, page))
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

// TestBadInput: a format other than man or markdown, or no --dir, is one
// line naming what is accepted, and nothing is written.
func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pdf", "--dir", "x"}, `want one format, man or markdown, got ["pdf"]`},
		{[]string{"--dir", "x"}, "want one format, man or markdown, got []"},
		{[]string{"man"}, "--dir is required"},
		{[]string{"man", "--pages", "x"}, "unknown flag: --pages"},
	} {
		err := run(tc.args, "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("gendocs %q: %v, want %q", tc.args, err, tc.want)
		}
	}
	if _, err := os.Stat("x"); err == nil {
		t.Error("a refused call created x")
	}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"man", "--dir", file}, ""); err == nil || !strings.Contains(err.Error(), `docs directory "`+file+`": `) {
		t.Errorf("gendocs man --dir FILE: %v", err)
	}
}
