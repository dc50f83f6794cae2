package cmd_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redistest"
)

// invisible are runes a terminal shows as nothing while they reorder or
// break the text around them (issue 19 §6), beside C0 and C1 controls.
var invisible = []string{"\u202e", "\u200e", "\u200f", "\u202a", "\u2066", "\u2069", "\u2028", "\u2029", "\u061c"}

// A key with a right-to-left override prints escaped in the table and in
// an error quoting it; JSON and YAML keep it exact. (inspect shows an
// owner with such runes as hex: it is not text.)
func TestHumanOutputEscapesBidi(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	c := s.Client(t)
	key := "lock:\u202eexe.txt"
	if err := c.Set(bg, key, "1:0123456789abcdef", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	for _, r := range invisible {
		if err := c.Set(bg, "lock:b"+r+"x", "1:0123456789abcdef", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := run(t, "inspect", "--pattern", "lock:*", "--redis", s.URL())
	if code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, errOut)
	}
	for _, r := range invisible {
		if strings.Contains(out, r) {
			t.Errorf("table printed %U raw:\n%s", []rune(r)[0], out)
		}
		if esc := fmt.Sprintf(`lock:b\u%04xx`, []rune(r)[0]); !strings.Contains(out, esc) {
			t.Errorf("table lacks the escaped key %s:\n%s", esc, out)
		}
	}
	if !strings.Contains(out, `lock:\u202eexe.txt`) {
		t.Errorf("table lacks the escaped key:\n%s", out)
	}
	for _, format := range []string{"json", "yaml"} {
		code, out, errOut := run(t, "inspect", "--key", key, "--redis", s.URL(), "-o", format)
		if code != 0 || !strings.Contains(out, key) {
			t.Errorf("%s: exit %d, %s; want the key %q exact:\n%s", format, code, errOut, key, out)
		}
	}
	// run quotes the held key and its holder in its one-line error.
	code, _, errOut = run(t, "run", "--key", key, "--budget", "5s", "--redis", s.URL(), "--", "true")
	if code == 0 || !strings.Contains(errOut, `lock:\u202eexe.txt`) || strings.ContainsAny(errOut, strings.Join(invisible, "")) {
		t.Errorf("run: exit %d, stderr %q; want the key escaped", code, errOut)
	}
}

// Key completion offers only keys that can be typed back as they are: a key
// with a newline offered two keys that do not exist, and ESC, BEL, NUL or a
// bidi override went raw to the terminal.
func TestCompletionSkipsUntypableKeys(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	c := s.Client(t)
	bad := []string{"lock:OrderId:nl\nlock:OrderId:fake", "lock:OrderId:esc\x1b[2J", "lock:OrderId:bel\a", "lock:OrderId:nul\x00",
		"lock:OrderId:tab\tdesc", "lock:OrderId:c1\u009b", "lock:OrderId:bad\xff"}
	for _, r := range invisible {
		bad = append(bad, "lock:OrderId:bidi"+r)
	}
	for _, k := range append(bad, "lock:OrderId:good-1", "lock:OrderId:naïve 2") {
		if err := c.Set(bg, k, "1:0123456789abcdef", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"LOCKCTL_COMPLETE_KEYS=1", "LOCKCTL_REDIS_URL=" + s.URL()}
	for _, args := range [][]string{{"__complete", "inspect", ""}, {"__complete", "watch", "--key", "lock:OrderId:"}} {
		code, out, errOut := runEnv(t, env, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		// The last line is Cobra's directive (:4).
		got := lines[:len(lines)-1]
		slices.Sort(got)
		want := []string{"good-1", "naïve 2"}
		if args[1] == "watch" {
			want = []string{"lock:OrderId:good-1", "lock:OrderId:naïve 2"}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%v offered %q; want %q", args, got, want)
		}
	}
}
