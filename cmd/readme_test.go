package cmd_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/redistest"
)

// A README example is a ```console block: lines starting with "$ " are
// commands, the lines after each are what it prints (stdout and stderr).
// An HTML comment right before the block steers the test:
//
//	<!-- test: skip -->            the block is not run (needs a terminal, runs forever)
//	<!-- test: mask REGEX -->      matches of REGEX are masked in both texts (repeatable)
type readmeBlock struct {
	line  int
	skip  bool
	masks []*regexp.Regexp
	steps []readmeStep
}

type readmeStep struct {
	command string
	want    string
}

var (
	directiveRE = regexp.MustCompile(`^<!-- test: (skip|mask (.+)) -->$`)
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
				if m[1] == "skip" {
					pending.skip = true
				} else {
					pending.masks = append(pending.masks, regexp.MustCompile(m[2]))
				}
			} else if strings.TrimSpace(line) != "" {
				pending = readmeBlock{}
			}
		}
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

// TestReadmeExamples runs every console example of README.md, in order,
// against one real redis-server (lockctl and redis-cli are pointed at it) in
// a scratch directory holding a link to the repository's testdata, and
// compares what each command prints with what the README shows.
func TestReadmeExamples(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	blocks := parseReadme(t, filepath.Join(root, "README.md"))
	if len(blocks) == 0 {
		t.Fatal("README.md has no console examples")
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
			if g, w := normalize(string(got), b.masks), normalize(st.want, b.masks); g != w {
				t.Errorf("README.md:%d: $ %s\n--- README shows\n%s\n--- got\n%s", b.line, st.command, st.want, got)
			}
		}
	}
}
