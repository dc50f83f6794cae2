package cmd

import (
	"strings"
	"testing"
)

// TestControlEscaper: control sequences from data are escaped; our own
// colour (SGR) passes only when colour is on.
func TestControlEscaper(t *testing.T) {
	in := "\x1b[1;31mkey\x1b[0m own\x1b[2Jer\x1b]0;t\x07 \r\u009b\tok\n"
	for _, c := range []struct {
		sgr  bool
		want string
	}{
		{false, `\x1b[1;31mkey\x1b[0m own\x1b[2Jer\x1b]0;t\x07 \x0d\u009b` + "\tok\n"},
		{true, "\x1b[1;31mkey\x1b[0m own" + `\x1b[2Jer\x1b]0;t\x07 \x0d\u009b` + "\tok\n"},
	} {
		var sb strings.Builder
		n, err := (&controlEscaper{w: &sb, sgr: c.sgr}).Write([]byte(in))
		if err != nil || n != len(in) {
			t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(in))
		}
		if sb.String() != c.want {
			t.Errorf("sgr=%v:\n got %q\nwant %q", c.sgr, sb.String(), c.want)
		}
	}
}
