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

// TestRenderTable: plain columns two spaces apart and a rounded-border table
// on a terminal, both aligned by display width (日本 is 4 cells wide), with
// headers upper-cased and a cell's lines stacked.
func TestRenderTable(t *testing.T) {
	header := []string{"key", "expires_at", "owner"}
	rows := [][]string{
		{"lock:日本", "-", "a"},
		{"lock:b", "in 5s", "two\nlines"},
	}
	for _, c := range []struct {
		tty  bool
		want string
	}{
		{false, "" +
			"KEY        EXPIRES AT  OWNER\n" +
			"lock:日本  -           a\n" +
			"lock:b     in 5s       two\n" +
			"                       lines\n"},
		{true, "" +
			"╭───────────┬────────────┬───────╮\n" +
			"│ KEY       │ EXPIRES AT │ OWNER │\n" +
			"├───────────┼────────────┼───────┤\n" +
			"│ lock:日本 │ -          │ a     │\n" +
			"│ lock:b    │ in 5s      │ two   │\n" +
			"│           │            │ lines │\n" +
			"╰───────────┴────────────┴───────╯\n"},
	} {
		var sb strings.Builder
		if err := renderTable(&sb, c.tty, newStyles(&sb, false), header, rows); err != nil {
			t.Fatal(err)
		}
		if sb.String() != c.want {
			t.Errorf("tty=%v:\n got %q\nwant %q", c.tty, sb.String(), c.want)
		}
	}
}

// A key or owner read from Redis with a newline or an escape sequence in it
// stays on its row, and the columns line up with the escaped text.
func TestTableEscapesCells(t *testing.T) {
	var sb strings.Builder
	p := &Printer{Format: formatTable, Out: &controlEscaper{w: &sb}, Styles: newStyles(&sb, false)}
	err := p.Print(nil, func(tv *TableView) {
		tv.Table([]string{"key", "owner"}, [][]string{{"lock:a\nFAKE LINE", "\x1b[31mRED"}, {"lock:b", "x"}})
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "KEY                OWNER\n" +
		`lock:a\nFAKE LINE  \x1b[31mRED` + "\n" +
		"lock:b             x\n"
	if sb.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", sb.String(), want)
	}
}
