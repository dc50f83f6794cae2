// Package examples tests the examples: it runs every example's README: each `$ ` line of its
// console blocks, from this directory, with a lockctl built from the parent
// module (or $LOCKCTL_BIN) first on PATH. Every command must exit 0; a
// `lockctl trial … --expect V` line printing a table must print
// "verdict: V"; `<!-- test: stdout REGEX -->` before a block makes each of
// its commands print a line matching REGEX.
package examples

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tools each example needs; a missing one fails it, naming the tool.
var tools = map[string][]string{
	"redsync-balance": {"psql"},
	"shell-psql":      {"redis-cli", "psql"},
	"python-redis-py": {"/usr/bin/python3"},
	"node-redlock":    {"node", "npm", "psql"},
	"idempotency":     {"redis-cli", "mariadb"},
	"order-import":    {"psql"},
}

var expectRE = regexp.MustCompile(`--expect (safe|unsafe)`)

func TestExamples(t *testing.T) {
	// LOCKCTL_BIN names a lockctl binary to try instead of building one;
	// --store runs lockctl-store, which must be beside it.
	bin := filepath.Dir(os.Getenv("LOCKCTL_BIN"))
	if os.Getenv("LOCKCTL_BIN") == "" {
		bin = t.TempDir()
		build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), ".", "./lockctl-store")
		build.Dir = ".."
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building lockctl: %v\n%s", err, out)
		}
	}
	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")
	readmes, _ := filepath.Glob("*/README.md")
	for _, readme := range readmes {
		name := filepath.Dir(readme)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, tool := range tools[name] {
				if _, err := exec.LookPath(tool); err != nil {
					missing(t, tool)
				}
			}
			if name == "python-redis-py" {
				if err := exec.Command("/usr/bin/python3", "-c", "import redis").Run(); err != nil {
					missing(t, "python3-redis")
				}
			}
			cmds := commands(t, readme)
			if len(cmds) == 0 {
				t.Fatalf("%s has no commands", readme)
			}
			for _, cmd := range cmds {
				line := cmd.line
				c := exec.Command("sh", "-c", line)
				c.Env = append(os.Environ(), "PATH="+path)
				out, err := c.CombinedOutput()
				if err != nil {
					t.Fatalf("$ %s\n%s\n%v", line, out, err)
				}
				if m := expectRE.FindStringSubmatch(line); m != nil && !strings.Contains(line, "-o json") && !strings.Contains(string(out), "verdict: "+m[1]) {
					t.Errorf("$ %s\nno \"verdict: %s\" in:\n%s", line, m[1], out)
				}
				if cmd.stdout != nil && !cmd.stdout.Match(out) {
					t.Errorf("$ %s\nno line matches %s in:\n%s", line, cmd.stdout, out)
				}
			}
		})
	}
}

func missing(t *testing.T, tool string) {
	t.Helper()
	t.Fatalf("%s is missing: the example needs it (.ci/run installs it; examples/README.md lists what each needs)", tool)
}

// command is one `$ ` line and the pattern its output must match (nil: none).
type command struct {
	line   string
	stdout *regexp.Regexp
}

var stdoutDirective = regexp.MustCompile(`^<!-- test: stdout (.+) -->$`)

// commands returns the `$ ` lines of a Markdown file's console blocks.
func commands(t *testing.T, path string) []command {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []command
	var want *regexp.Regexp
	in := false
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case stdoutDirective.MatchString(line):
			want = regexp.MustCompile("(?m)" + stdoutDirective.FindStringSubmatch(line)[1])
		case strings.HasPrefix(line, "```console"):
			in = true
		case strings.HasPrefix(line, "```"):
			in, want = false, nil
		case in && strings.HasPrefix(line, "$ "):
			out = append(out, command{line: strings.TrimPrefix(line, "$ "), stdout: want})
		}
	}
	return out
}
