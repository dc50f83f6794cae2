//go:build linux

package cmd_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lockctl/lockctl/internal/redistest"
)

// trialLine is trial's progress line (cmd/progress.go trialStatus).
var trialLine = regexp.MustCompile(`trial \d+s/2s, \d+s left; faults (\d+), violations \d+`)

// trialArgs is a 2s trial with kill faults (the first after 400ms).
func trialArgs(t *testing.T, extra ...string) []string {
	t.Helper()
	worker, err := filepath.Abs("../testdata/trial/fenced.sh")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"trial", "--duration", "2s", "--fault-duration", "300ms", "--nemesis", "kill", "--seed", "1", "--workers", "2", "--grace", "1s"}, extra...)
	return append(args, "--", worker)
}

// On a terminal, trial redraws a line with elapsed and remaining time and
// the faults so far, and erases it before the result.
func TestTrialProgressOnTTY(t *testing.T) {
	t.Parallel()
	out := outputOnTTY(t, 80, nil, trialArgs(t)...)
	lines := trialLine.FindAllStringSubmatchIndex(out, -1)
	if len(lines) == 0 {
		t.Fatalf("no progress line: %q", head(out))
	}
	faults := 0
	for _, m := range lines {
		n, _ := strconv.Atoi(out[m[2]:m[3]])
		faults = max(faults, n)
	}
	if faults == 0 {
		t.Errorf("no progress line counted a fault: %q", head(out))
	}
	fitsLine(t, out, "left; faults", 80)
	verdict := strings.Index(out, "verdict: ")
	last := lines[len(lines)-1][1]
	if verdict < last {
		t.Fatalf("the result came before the last progress line: %q", head(out))
	}
	// progressbar erases its line with \r, spaces, \r.
	if !regexp.MustCompile(`\r {40,}\r`).MatchString(out[last:verdict]) {
		t.Errorf("the progress line was not erased before the result: %q", head(out[last:verdict]))
	}
}

// fitsLine fails when a redrawn line containing want is cols cells or
// wider: the terminal wraps it and the \r that erases it misses a part.
func fitsLine(t *testing.T, out, want string, cols int) {
	t.Helper()
	for _, l := range strings.FieldsFunc(out, func(r rune) bool { return r == '\r' || r == '\n' }) {
		if strings.Contains(l, want) && utf8.RuneCountInString(l) >= cols {
			t.Errorf("a progress line of %d cells on %d columns: %q", utf8.RuneCountInString(l), cols, l)
		}
	}
}

// head is the start of a long output, for a failure message.
func head(s string) string { return s[:min(len(s), 2000)] }

// Piped, or with --quiet, trial shows no progress line.
func TestTrialNoProgress(t *testing.T) {
	t.Parallel()
	c := exec.Command("lockctl", trialArgs(t)...)
	home := t.TempDir()
	c.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	_ = c.Run()
	if !strings.Contains(stdout.String(), "verdict: ") {
		t.Fatalf("no result: %s %s", stdout.String(), stderr.String())
	}
	if strings.Contains(stderr.String(), "left; faults") {
		t.Errorf("piped stderr got a progress line: %q", stderr.String())
	}
	out := outputOnTTY(t, 80, nil, trialArgs(t, "--quiet")...)
	if !strings.Contains(out, "verdict: ") || strings.Contains(out, "left; faults") {
		t.Errorf("--quiet on a terminal: %q", head(out))
	}
}

// inspect --pattern keeps its bar going while it reads and judges, says
// that it sorts, and erases the line before the table.
func TestInspectPatternProgress(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	// Leases under the cap and no fence: no findings, so the table is all
	// there is to print (a -race binary under load prints slowly).
	const n = 5000
	pipe := srv.Client(t).Pipeline()
	for i := 1; i <= n; i++ {
		pipe.Set(context.Background(), "lock:OrderId:o"+strconv.Itoa(i), "tok-c8e1a9"+strconv.Itoa(i), time.Duration(50000+i)*time.Millisecond)
	}
	if _, err := pipe.Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
	env := append(testEnv(srv.URL()), "LOCKCTL_TEST_PROGRESS_NOW=1") // no 500ms wait before the bar
	out := outputOnTTY(t, 70, env, "inspect", "--pattern", "lock:Order*")
	fitsLine(t, out, "locks judged", 70)
	judged := regexp.MustCompile(`scanning.*: (\d+) locks judged`).FindAllStringSubmatch(out, -1)
	if len(judged) == 0 {
		t.Fatalf("no judged count: %q", head(out))
	}
	if last := judged[len(judged)-1][1]; last != strconv.Itoa(n) {
		t.Errorf("the last judged count is %s, want %d", last, n)
	}
	sorting := strings.LastIndex(out, "sorting "+strconv.Itoa(n)+" locks by TTL")
	table := strings.Index(out, "lock:OrderId:o1 ")
	if sorting < 0 || table < sorting {
		t.Fatalf("want the sorting line (at %d) before the table (at %d): %q", sorting, table, head(out))
	}
	if !regexp.MustCompile(`\r {40,}\r`).MatchString(out[sorting:table]) {
		t.Errorf("the progress line was not erased before the table: %q", head(out[sorting:table]))
	}
	quiet := outputOnTTY(t, 80, env, "inspect", "--pattern", "lock:*", "--quiet")
	if strings.Contains(quiet, "locks judged") || strings.Contains(quiet, "sorting") {
		t.Errorf("--quiet showed progress: %q", head(quiet))
	}
}

// simulate --explore's bar shows on a terminal, and not with --quiet.
func TestSimulateExploreQuiet(t *testing.T) {
	t.Parallel()
	args := []string{"simulate", "renewal-loss", "--cancel-on-loss=false", "--explore", "--runs", "50000", "--seed", "7"}
	if out := outputOnTTY(t, 80, nil, args...); !strings.Contains(out, "exploring schedules") {
		t.Fatalf("no progress bar on a terminal: %q", head(out))
	}
	if out := outputOnTTY(t, 80, nil, append(args, "--quiet")...); !strings.Contains(out, "verdict: ") || strings.Contains(out, "exploring schedules") {
		t.Errorf("--quiet on a terminal: %q", head(out))
	}
}
