package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/simulate"
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
	// Bytes that are not UTF-8 (a lone 0x9b is CSI to an 8-bit terminal)
	// are written as \xNN; valid runes pass; a rune cut by the end of one
	// write is left whole for the next.
	var sb strings.Builder
	esc := &controlEscaper{w: &sb}
	for _, part := range []string{"k\xff\x9b é日 \xe2\x82", "\xac \xf0", "\x9f", "\x98\x80\x80\n"} {
		if _, err := esc.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	if want := `k\xff\x9b é日 € 😀\x80` + "\n"; sb.String() != want {
		t.Errorf("not UTF-8:\n got %q\nwant %q", sb.String(), want)
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
		if err := renderTable(&sb, c.tty, 0, newStyles(&sb, false), header, rows); err != nil {
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

// A title is text, not a format: a file or task name with %d in it is
// printed as given.
func TestTitleIsNotAFormat(t *testing.T) {
	var sb strings.Builder
	p := &Printer{Format: formatTable, Out: &controlEscaper{w: &sb}, Styles: newStyles(&sb, false)}
	if err := p.Print(nil, func(tv *TableView) { tv.Title("scenario pay%dout%s (inc%d.yaml)") }); err != nil {
		t.Fatal(err)
	}
	if want := "scenario pay%dout%s (inc%d.yaml)\n"; sb.String() != want {
		t.Errorf("title %q, want %q", sb.String(), want)
	}
}

// TestLiveAgreement: a live run whose verdict matches the model's but whose
// violation codes do not is a warning that names both sets.
func TestLiveAgreement(t *testing.T) {
	st := newStyles(&strings.Builder{}, false)
	// run gives a verdict from its codes, each found twice.
	run := func(codes ...string) (string, []simulate.Violation) {
		var vs []simulate.Violation
		for _, c := range codes {
			vs = append(vs, simulate.Violation{Code: c}, simulate.Violation{Code: c})
		}
		if len(vs) == 0 {
			return "safe", nil
		}
		return "unsafe", vs
	}
	compare := func(model, live []string) SimulateLiveResult {
		var m simulate.Result
		var l simulate.LiveResult
		m.Verdict, m.Violations = run(model...)
		l.Verdict, l.Violations = run(live...)
		return compareLive(m, l)
	}
	for _, c := range []struct {
		res       SimulateLiveResult
		sameCodes bool
		want      string
	}{
		{compare([]string{"OVERLAP", "LOCK_LOST_WHILE_WORKING"}, []string{"LOCK_LOST_WHILE_WORKING", "OVERLAP"}), true, "ok the verdicts agree"},
		{compare(nil, nil), true, "ok the verdicts agree"},
		{compare([]string{"OVERLAP", "LOCK_LOST_WHILE_WORKING"}, []string{"OVERLAP"}), false,
			"warning the verdicts agree, the violations differ: model: LOCK_LOST_WHILE_WORKING, OVERLAP; live: OVERLAP (live timing is real: see the live timeline)"},
		{compare([]string{"OVERLAP"}, nil), false, "warning the verdicts differ (live timing is real: see the live timeline)"},
	} {
		if c.res.SameCodes != c.sameCodes {
			t.Errorf("same_codes %v, want %v: %+v", c.res.SameCodes, c.sameCodes, c.res)
		}
		if got := liveAgreement(st, c.res); got != c.want {
			t.Errorf("liveAgreement:\n got %q\nwant %q", got, c.want)
		}
	}
}

// A cell or a line of data is the whole text: a rune cut at its end is
// escaped, and a colour sequence in data is escaped even on a colour
// terminal (ESC [8m would hide what follows).
func TestDataTextEscapes(t *testing.T) {
	if got, want := escapeCell("t:\xe4\xb8", true), `t:\xe4\xb8`; got != want {
		t.Errorf("escapeCell = %q, want %q", got, want)
	}
	if got, want := oneLineText("pay\x1b[8m-decoy\r\n"), `pay\x1b[8m-decoy\r\n`; got != want {
		t.Errorf("oneLineText = %q, want %q", got, want)
	}
	// A server's error as watch's retry line and run's warnings print it
	// (a fake server answered -LOADING with an OSC title sequence).
	if got, want := oneLine(errors.New("LOADING \x1b]0;pwn\x07 loading\nnext")), `LOADING \x1b]0;pwn\x07 loading next`; got != want {
		t.Errorf("oneLine = %q, want %q", got, want)
	}
	if _, rows := inspectRows([]inspect.Lock{{Key: "k\x1b[8mx", Owner: "o\x1b[31m"}}); rows[0][0] != `k\x1b[8mx` || rows[0][5] != `o\x1b[31m` {
		t.Errorf("inspect row %q", rows[0])
	}
}

// YAML output quotes the strings a YAML 1.1 reader takes for booleans (a key
// named "on" came back as True from PyYAML), and those YAML 1.2 reads as
// another type; other strings stay plain.
func TestYAMLQuotesOldBooleans(t *testing.T) {
	var sb strings.Builder
	if err := writeYAML(&sb, map[string]string{"a": "on", "b": "Yes", "c": "n", "d": "OFF", "e": "true", "f": "12", "g": "lock:on"}); err != nil {
		t.Fatal(err)
	}
	want := "a: \"on\"\nb: \"Yes\"\nc: \"n\"\nd: \"OFF\"\ne: \"true\"\nf: \"12\"\ng: lock:on\n"
	if sb.String() != want {
		t.Errorf("yaml:\n%s\nwant:\n%s", sb.String(), want)
	}
}

// An object stream prints its rows as they come once streamRows rows have
// sized the columns (inspect --pattern --sort scan: the first screen comes
// before the scan ends); on a terminal it keeps to the width, shortening a
// later, longer key in the middle.
func TestObjectStreamPrintsAsRowsCome(t *testing.T) {
	var out bytes.Buffer
	p := &Printer{Format: formatTable, Out: &out, TTY: true, Width: 40, Styles: newStyles(&out, false)}
	s := (&TableView{p: p}).ObjectStream([]Column{{Name: "key", Shorten: true}, {Name: "ttl", Rank: 1}, {Name: "owner", Rank: 2}})
	for i := range streamRows - 1 {
		s.Add([]string{fmt.Sprintf("lock:%02d", i), "1s", "o"})
	}
	if out.Len() != 0 {
		t.Fatalf("printed before the columns were sized:\n%s", out.String())
	}
	s.Add([]string{"lock:last-of-the-first-screen", "1s", "o"})
	if n := strings.Count(out.String(), "\n"); n != streamRows+1 {
		t.Fatalf("%d lines after %d rows, want the header and every row", n, streamRows)
	}
	s.Add([]string{"lock:a-much-longer-key-than-any-of-the-first-screen-0001", "2s", "o"})
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	last := lines[len(lines)-1]
	if len(lines) != streamRows+2 || !strings.Contains(last, "…") || lipgloss.Width(last) > 40 {
		t.Errorf("the row after the first screen was not printed at once, shortened to 40 columns: %q", last)
	}
	if dropped := s.Close(); len(dropped) != 0 {
		t.Errorf("dropped %v at 40 columns", dropped)
	}
}

// TestWrapWords: lines break at spaces only, each word keeps the spaces
// before it unless it starts a line, a word wider than the width stays
// whole, and trailing spaces go.
func TestWrapWords(t *testing.T) {
	for _, tc := range []struct {
		in    string
		width int
		want  string
	}{
		{"short", 80, "short"},
		{"one two three four", 9, "one two\nthree\nfour"},
		{"  indented  words here  ", 12, "  indented\nwords here"},
		{"a verylongwordindeed b", 5, "a\nverylongwordindeed\nb"},
		{"para one\n\n  para two", 6, "para\none\n\n  para\ntwo"},
		{"x y", 0, "x y"},
	} {
		if got := wrapWords(tc.in, tc.width); got != tc.want {
			t.Errorf("wrapWords(%q, %d) = %q, want %q", tc.in, tc.width, got, tc.want)
		}
	}
}
