package cmd_test

import (
	"bufio"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/redistest"
)

// An example is a ```console block of README.md or of a page under docs/:
// lines starting with "$ " are commands, the lines after each are what it
// prints (stdout and stderr). An HTML comment right before the block steers
// the test:
//
//	<!-- test: skip -->            the block is not run (needs a terminal, runs forever)
//	<!-- test: mask REGEX -->      matches of REGEX are masked in both texts (repeatable)
//	<!-- test: excerpt -->         the shown lines appear in the output in this order;
//	                               a "..." line stands for lines left out
type readmeBlock struct {
	line    int
	skip    bool
	excerpt bool
	masks   []*regexp.Regexp
	steps   []readmeStep
}

type readmeStep struct {
	command string
	want    string
}

var (
	directiveRE = regexp.MustCompile(`^<!-- test: (skip|excerpt|mask (.+)) -->$`)
	// Always masked: owner tokens (32 hex), RFC3339 times, durations measured live.
	defaultMasks = []*regexp.Regexp{
		regexp.MustCompile(`\b[0-9a-f]{32}\b`),
		regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`),
	}
)

func parseReadme(t *testing.T, path string) []readmeBlock {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []readmeBlock
	var pending readmeBlock
	var cur *readmeBlock
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && line == "```console":
			pending.line = n
			blocks = append(blocks, pending)
			cur = &blocks[len(blocks)-1]
			pending = readmeBlock{}
		case cur != nil && line == "```":
			cur = nil
		case cur != nil && strings.HasPrefix(line, "$ "):
			cur.steps = append(cur.steps, readmeStep{command: line[2:]})
		case cur != nil && len(cur.steps) > 0:
			cur.steps[len(cur.steps)-1].want += line + "\n"
		case cur == nil:
			if m := directiveRE.FindStringSubmatch(line); m != nil {
				switch m[1] {
				case "skip":
					pending.skip = true
				case "excerpt":
					pending.excerpt = true
				default:
					pending.masks = append(pending.masks, regexp.MustCompile(m[2]))
				}
			} else if strings.TrimSpace(line) != "" {
				pending = readmeBlock{}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// normalize masks what varies between runs and folds runs of blanks, so
// table columns may shift when a masked value has another width.
func normalize(s string, masks []*regexp.Regexp) string {
	for _, m := range append(defaultMasks, masks...) {
		s = m.ReplaceAllString(s, "<masked>")
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		out = append(out, strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(out, "\n")
}

// hasExcerpt reports whether every line of want other than "..." appears in
// got, in the same order (both normalized).
func hasExcerpt(got, want string) bool {
	lines := strings.Split(got, "\n")
	i := 0
	for _, w := range strings.Split(want, "\n") {
		if w == "..." {
			continue
		}
		for i < len(lines) && lines[i] != w {
			i++
		}
		if i == len(lines) {
			return false
		}
		i++
	}
	return true
}

// exampleFiles lists README.md and every Markdown page under docs/, relative
// to root; docs/reference is left out: it is generated from --help.
func exampleFiles(t *testing.T, root string) []string {
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && rel == filepath.Join("docs", "reference") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestReadmeExamples runs the console examples of README.md and of every
// page under docs/: one parallel subtest per file, its examples in order,
// against a redis-server of its own (lockctl and redis-cli are pointed at
// it) in a scratch directory holding a link to the repository's testdata.
// What each command prints is compared with what the page shows.
func TestReadmeExamples(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range exampleFiles(t, root) {
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			blocks := parseReadme(t, filepath.Join(root, rel))
			if rel == "README.md" && len(blocks) == 0 {
				t.Fatal("README.md has no console examples")
			}
			runExamples(t, root, rel, blocks)
		})
	}
}

// runExamples runs the blocks of one file; a file whose blocks are all
// skipped starts no server.
func runExamples(t *testing.T, root, rel string, blocks []readmeBlock) {
	runnable := false
	for _, b := range blocks {
		runnable = runnable || !b.skip
	}
	if !runnable {
		t.Skip("no console example to run")
	}
	srv := redistest.Start(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, ".bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// redis-cli in the examples talks to the test server.
	realCLI, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli not found on PATH: install Debian's redis-tools (apt-get install redis-tools)")
	}
	wrapper := "#!/bin/sh\nexec " + realCLI + " -p " + strconv.Itoa(srv.Port) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "redis-cli"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "testdata"), filepath.Join(dir, "testdata")); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"),
		"HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, ".config"),
		"NO_COLOR=1", "LOCKCTL_REDIS_URL="+srv.URL(), "COLUMNS=200")
	for _, b := range blocks {
		if b.skip {
			continue
		}
		for _, st := range b.steps {
			c := exec.Command("sh", "-c", st.command)
			c.Dir, c.Env = dir, env
			got, _ := c.CombinedOutput()
			g, w := normalize(string(got), b.masks), normalize(st.want, b.masks)
			if g == w || b.excerpt && hasExcerpt(g, w) {
				continue
			}
			t.Errorf("%s:%d: $ %s\n--- %s shows\n%s\n--- got\n%s", rel, b.line, st.command, rel, st.want, got)
		}
	}
}

// linkRE matches the target of a Markdown link: [text](target).
var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// proseOf drops fenced code blocks and HTML comment lines (the examples'
// directives), whose brackets are no links.
func proseOf(md string) string {
	var b strings.Builder
	fenced := false
	for _, l := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			fenced = !fenced
		case !fenced && !strings.HasPrefix(l, "<!--"):
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestDocLinks fails on a relative link in README.md or docs/ whose file
// does not exist: pages moved between README.md and docs/ keep their links.
func TestDocLinks(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := append(exampleFiles(t, root), "ARCHITECTURE.md", "CONTRIBUTING.md")
	for _, rel := range files {
		text, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range linkRE.FindAllStringSubmatch(proseOf(string(text)), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, filepath.Dir(rel), target)); err != nil {
				t.Errorf("%s: link %s: no such file", rel, m[1])
			}
		}
	}
}

// TestReadmeExcerpt checks the excerpt directive's matching: lines in
// order, "..." skipping any number of them.
func TestReadmeExcerpt(t *testing.T) {
	got := "a\nb\nc\nd"
	for want, ok := range map[string]bool{
		"a\n...\nc": true, "...\nb\nd": true, "a\nb\nc\nd": true,
		"c\n...\na": false, "a\nx": false, "...\ne": false,
	} {
		if hasExcerpt(got, want) != ok {
			t.Errorf("hasExcerpt(%q, %q) = %v, want %v", got, want, !ok, ok)
		}
	}
}
