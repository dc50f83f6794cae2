package cmd

import (
	"io"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/inspect"
)

// TestPatternLineWidth: a pattern event fits 80 columns, its message
// wrapped under the time; without a width it stays one line.
func TestPatternLineWidth(t *testing.T) {
	st := newStyles(io.Discard, false)
	e := inspect.Event{At: "2026-12-03T10:34:48.081Z", Key: "lock:OrderId:order-demo-001", Event: inspect.EventTakeover,
		Message: "0123456789abcdef0123456789abcdef took over from fedcba9876543210fedcba9876543210 with no gap seen"}
	got := patternLine(st, e, 80)
	lines := strings.Split(got, "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "10:34:48.081 TAKEOVER        lock:OrderId:order-demo-001") {
		t.Fatalf("patternLine at 80 columns:\n%s", got)
	}
	for _, l := range lines {
		if len(l) > 80 || l != lines[0] && !strings.HasPrefix(l, strings.Repeat(" ", 13)) {
			t.Errorf("line %q is over 80 columns or not indented under the event", l)
		}
	}
	if one := patternLine(st, e, 0); strings.Contains(one, "\n") || !strings.HasSuffix(one, "with no gap seen") {
		t.Errorf("patternLine without a width = %q, want one line", one)
	}
}
