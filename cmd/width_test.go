//go:build linux

package cmd_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/creack/pty"
	"github.com/lockctl/lockctl/internal/golden"
	"github.com/lockctl/lockctl/internal/redistest"
)

// outputOnTTY runs lockctl on a pseudo-terminal cols columns wide with env
// added, and returns what the terminal showed, with \r\n as \n.
func outputOnTTY(t *testing.T, cols uint16, env []string, args ...string) string {
	t.Helper()
	c := exec.Command("lockctl", args...)
	home := t.TempDir()
	c.Env = append(append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "NO_COLOR=1", "COLUMNS="), env...)
	tty, err := pty.StartWithSize(c, &pty.Winsize{Cols: cols, Rows: 40})
	if err != nil {
		// .ci/run sets LOCKCTL_REQUIRE_PTY: no terminal there is a failure.
		if os.Getenv("LOCKCTL_REQUIRE_PTY") != "" {
			t.Fatalf("no pseudo-terminal (/dev/ptmx): %v", err)
		}
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer tty.Close()
	done := make(chan []byte)
	go func() {
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(tty) // EIO once the program has exited
		done <- buf.Bytes()
	}()
	var out []byte
	select {
	case out = <-done:
	case <-time.After(30 * time.Second):
		_ = c.Process.Kill()
		t.Fatalf("%v did not finish", args)
	}
	var exit *exec.ExitError
	if err := c.Wait(); err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(out), "\r\n", "\n")
}

// piped runs lockctl with its output into a pipe.
func piped(t *testing.T, env []string, args ...string) string {
	t.Helper()
	c := exec.Command("lockctl", args...)
	home := t.TempDir()
	c.Env = append(append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "NO_COLOR=1"), env...)
	out, err := c.Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return string(out)
}

// swimlaneAxis is the first line of simulate's swimlane, which is drawn as
// wide as the terminal allows: its characters are not the same count.
var swimlaneAxis = regexp.MustCompile(`^ {6}0 +\S+$`)

// content is the text's characters other than spaces and the box drawing
// of borders, sorted, with the swimlane (its axis to the next empty line)
// left out: the same content laid out in other columns gives the same
// string.
func content(s string) string {
	var rs []rune
	lane := false
	for _, l := range strings.Split(s, "\n") {
		if lane = lane && l != "" || swimlaneAxis.MatchString(l); lane {
			continue
		}
		for _, r := range l {
			if r != ' ' && (r < 0x2500 || r > 0x257f) {
				rs = append(rs, r)
			}
		}
	}
	slices.Sort(rs)
	return string(rs)
}

// lacks returns the runes of the sorted want that the sorted got lacks
// (records repeat the headers: got may have more).
func lacks(got, want string) string {
	g, w := []rune(got), []rune(want)
	var missing []rune
	for len(w) > 0 {
		switch {
		case len(g) == 0 || w[0] < g[0]:
			missing = append(missing, w[0])
			w = w[1:]
		case w[0] == g[0]:
			g, w = g[1:], w[1:]
		default:
			g = g[1:]
		}
	}
	return string(missing)
}

// Bordered tables fit the terminal (issue 21 §3): at 60, 80 and 120 columns
// no line is wider than the terminal and nothing is lost against the piped
// output; COLUMNS overrides the terminal's size.
func TestTablesFitTheTerminal(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	for _, k := range []string{"lock:OrderId:order-demo-001", "horizon:lock:x", "lock:OrderId:a-very-long-order-identifier-from-the-shop-frontend-0001"} {
		if err := c.Set(bg, k, "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	spec, err := filepath.Abs("../testdata/tasks/payout.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"LOCKCTL_REDIS_URL=" + srv.URL()}
	commands := [][]string{
		{"lease", "--budget", "1200s"},
		{"checklist", "--spec", spec},
		{"checklist"},
		{"simulate", "--list"},
		{"simulate", "stale-writer"},
	}
	for _, args := range commands {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			want := content(piped(t, env, args...))
			for _, cols := range []uint16{60, 80, 120} {
				out := outputOnTTY(t, cols, env, args...)
				if !strings.Contains(out, "╭") {
					t.Errorf("%v at %d columns: no bordered table:\n%s", args, cols, out)
				}
				for _, l := range strings.Split(out, "\n") {
					if w := lipgloss.Width(l); w > int(cols) {
						t.Errorf("%v at %d columns: a line is %d wide: %q", args, cols, w, l)
					}
				}
				if missing := lacks(content(out), want); missing != "" {
					t.Errorf("%v at %d columns: %q of the piped output is missing:\n%s", args, cols, missing, out)
				}
			}
		})
	}
	// COLUMNS wins over the terminal's own size.
	out := outputOnTTY(t, 120, append(env, "COLUMNS=60"), "simulate", "--list")
	for _, l := range strings.Split(out, "\n") {
		if w := lipgloss.Width(l); w > 60 {
			t.Errorf("COLUMNS=60: a line is %d wide: %q", w, l)
		}
	}
}

// Object tables keep one row per lock at any width and never split a key,
// an owner token or a timestamp (issue 32 §1-2): at 80 and 160 columns no
// line is wider than the terminal, every row is one line, what a narrow
// terminal leaves out of the table is printed whole below it, and -o wide
// keeps every column.
func TestObjectTablesNeverSplit(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	owner := "5f0c2b6f3e1a4d7c9b8a6e5d4c3b2a19"
	long := "lock:OrderId:a-very-long-order-identifier-from-the-shop-frontend-0001"
	for k, v := range map[string]string{"lock:OrderId:order-demo-001": "12:" + owner, "horizon:lock:x": "1", long: "7:" + owner} {
		if err := c.Set(bg, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"LOCKCTL_REDIS_URL=" + srv.URL()}
	for _, cols := range []uint16{80, 160} {
		t.Run(strconv.Itoa(int(cols)), func(t *testing.T) {
			t.Parallel()
			out := outputOnTTY(t, cols, env, "inspect", "--pattern", "*")
			lines := strings.Split(out, "\n")
			for _, l := range lines {
				// A word wider than the terminal stands alone on its line.
				if w := lipgloss.Width(l); w > int(cols) && strings.Contains(l, " ") {
					t.Errorf("a line is %d wide: %q", w, l)
				}
			}
			if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "KEY ") && strings.Contains(l, "FINDINGS") }) {
				t.Errorf("no one-line header with KEY and FINDINGS:\n%s", out)
			}
			// The token, the long key and each row appear whole on one line.
			for _, whole := range []string{owner, long, "horizon:lock:x"} {
				if !strings.Contains(out, whole) {
					t.Errorf("%q is not whole on one line:\n%s", whole, out)
				}
			}
			golden.Assert(t, []byte(out), "")
			wide := outputOnTTY(t, cols, env, "inspect", "--pattern", "*", "-o", "wide")
			if !strings.Contains(wide, "EXPIRES AT") || !strings.Contains(wide, "OWNER") {
				t.Errorf("-o wide left out a column:\n%s", wide)
			}
		})
	}
	t.Run("unlock", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		if err := srv.Client(t).Set(bg, "lock:OrderId:order-demo-001", "12:"+owner, 0).Err(); err != nil {
			t.Fatal(err)
		}
		env := []string{"LOCKCTL_REDIS_URL=" + srv.URL()}
		out := outputOnTTY(t, 80, env, "unlock", "order-demo-001", "--owner", owner)
		if !strings.Contains(out, owner) {
			t.Errorf("the owner token is not whole on one line:\n%s", out)
		}
		for _, l := range strings.Split(out, "\n") {
			if w := lipgloss.Width(l); w > 80 {
				t.Errorf("a line is %d wide: %q", w, l)
			}
		}
		golden.Assert(t, []byte(mask(out)), "")
	})
}

// pttlMask hides a live PTTL.
var pttlMask = regexp.MustCompile(`\b\d+(\.\d+)?(ms|s)\b`)

func mask(s string) string { return pttlMask.ReplaceAllString(s, "PTTL") }
