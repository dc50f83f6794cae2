package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/lipgloss"
	"go.yaml.in/yaml/v3"
)

// Output formats every data command offers; some add their own.
const (
	formatTable = "table"
	formatJSON  = "json"
	formatYAML  = "yaml"
	// formatWide is the table with every column, on any terminal width.
	formatWide = "wide"
)

// dataFormats are the formats of a plain data command.
var dataFormats = []string{formatTable, formatJSON, formatYAML}

// The formats of inspect, watch and simulate, beside dataFormats and checklistFormats.
var (
	inspectFormats  = []string{formatTable, formatJSON, formatYAML, formatJSONL, formatWide}
	watchFormats    = []string{formatTable, formatJSONL}
	simulateFormats = []string{formatTable, formatJSON, formatYAML, formatMermaid, formatJUnit, formatHTML}
	unlockFormats   = []string{formatTable, formatJSON, formatYAML, formatWide}
)

// allFormats are offered by shell completion of -o for a command that does
// not declare its own with outputFormats.
var allFormats = []string{formatTable, formatJSON, formatYAML, "jsonl", "markdown", "junit", "sarif", "github", "mermaid", formatHTML, formatWide}

// outputFormatsKey is the command annotation listing the -o formats the
// command accepts (comma-separated), for shell completion; the command's
// f.Output call checks the same list.
const outputFormatsKey = "lockctl_output_formats"

func outputFormats(formats []string) map[string]string {
	return map[string]string{outputFormatsKey: strings.Join(formats, ",")}
}

// Printer renders a command's result in the chosen format. JSON and YAML
// come from the same struct (json tags; YAML keeps the JSON names and order),
// so the three formats show the same data.
type Printer struct {
	Format string
	Out    io.Writer
	TTY    bool
	Styles *Styles
	// Color: our SGR colour sequences are on (see controlEscaper).
	Color bool
	// Width is the terminal's width in columns that table output fits on
	// a TTY (0: no limit).
	Width int
}

// newPrinter returns the printer for this invocation's stdout.
func (f *Factory) newPrinter(format string) *Printer {
	color := colorWanted(f.IO.OutTTY, f.Config.GetBool(keyNoColor), f.IO.getenv("NO_COLOR"))
	width := 0
	if f.IO.OutTTY {
		width = f.IO.OutWidth
	}
	return &Printer{Format: format, Out: &controlEscaper{w: f.IO.Out, sgr: color}, TTY: f.IO.OutTTY, Styles: newStyles(f.IO.Out, color), Color: color, Width: width}
}

// controlEscaper writes text with every control character written as \xNN
// (C0 but newline and tab, DEL) or \u00NN (the C1 runes U+0080..U+009F),
// and every byte that is not UTF-8 as \xNN (a lone 0x9b is CSI to a
// terminal that reads 8-bit C1 controls; two different such bytes would
// both show as U+FFFD), so a key name or owner token read from Redis cannot
// move the cursor, clear or retitle the terminal (ECMA-48 escape and
// control sequences), and names its bytes as redis-cli does. A sequence cut
// by the end of a write is left whole for the next. With sgr, our own colour
// sequences (ESC [ digits and ; m) pass. JSON already escapes control
// characters, so only text formats change.
type controlEscaper struct {
	w   io.Writer
	sgr bool
	// cut is how many continuation bytes the rune cut by the end of the
	// last write still has to come: they pass as they are.
	cut int
	// whole says each write is the whole text: a rune cut by its end is
	// bytes that are not UTF-8.
	whole bool
	// bidi escapes the invisible runes that reorder or break a line too
	// (isBidiOrLineBreak); only text for people sets it: YAML keeps them.
	bidi bool
}

func (c *controlEscaper) Write(b []byte) (int, error) {
	clean := c.cut == 0
	for _, x := range b {
		if x < 0x20 && x != '\n' && x != '\t' || x >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return c.w.Write(b)
	}
	out := make([]byte, 0, len(b)+16)
	i := 0
	for ; c.cut > 0 && i < len(b) && !utf8.RuneStart(b[i]); i++ {
		out = append(out, b[i])
		c.cut--
	}
	if i < len(b) {
		c.cut = 0
	}
	for i < len(b) {
		x := b[i]
		switch {
		case x == 0x1b && c.sgr && sgrLen(b[i:]) > 0:
			n := sgrLen(b[i:])
			out = append(out, b[i:i+n]...)
			i += n
			continue
		case x < 0x20 && x != '\n' && x != '\t' || x == 0x7f:
			out = fmt.Appendf(out, "\\x%02x", x)
		case x >= 0x80:
			if !c.whole && !utf8.FullRune(b[i:]) { // a valid start cut by the end of b
				c.cut = runeLenByLead(x) - (len(b) - i)
				out = append(out, b[i:]...)
				i = len(b)
				continue
			}
			r, n := utf8.DecodeRune(b[i:])
			switch {
			case r == utf8.RuneError && n == 1:
				out = fmt.Appendf(out, "\\x%02x", x)
			case r >= 0x80 && r <= 0x9f, c.bidi && isBidiOrLineBreak(r):
				out = fmt.Appendf(out, "\\u%04x", r)
			default:
				out = append(out, b[i:i+n]...)
			}
			i += n
			continue
		default:
			out = append(out, x)
		}
		i++
	}
	if _, err := c.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// isBidiOrLineBreak reports the runes a terminal shows as nothing while they
// reorder the text around them or break its line: the Unicode
// Bidi_Control runes (U+061C, U+200E/F, U+202A..E, U+2066..9: the
// "Trojan Source" overrides, CVE-2021-42574) and the line and paragraph
// separators U+2028/9. A key "lock:\u202eexe.txt" would print as
// "lock:txt.exe".
func isBidiOrLineBreak(r rune) bool {
	return r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r)
}

// runeLenByLead is the length of the UTF-8 sequence lead starts (lead is
// 0xc2..0xf4, a byte that can start a multi-byte rune).
func runeLenByLead(lead byte) int {
	switch {
	case lead >= 0xf0:
		return 4
	case lead >= 0xe0:
		return 3
	}
	return 2
}

// sgrLen is the length of the SGR sequence (ESC [ digits and ; m) b starts
// with, or 0.
func sgrLen(b []byte) int {
	if len(b) < 3 || b[0] != 0x1b || b[1] != '[' {
		return 0
	}
	for i := 2; i < len(b); i++ {
		switch {
		case b[i] == 'm':
			return i + 1
		case b[i] != ';' && (b[i] < '0' || b[i] > '9'):
			return 0
		}
	}
	return 0
}

// Print writes data as JSON or YAML, or calls table for the table format.
func (p *Printer) Print(data any, table func(*TableView)) error {
	switch p.Format {
	case formatJSON:
		return writeJSON(p.Out, data)
	case formatYAML:
		return writeYAML(p.Out, data)
	}
	tv := &TableView{p: p}
	table(tv)
	return tv.err
}

func writeJSON(w io.Writer, data any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(data)
}

// writeYAML converts through JSON so field names, order and null/omitempty
// behaviour match the JSON output exactly.
func writeYAML(w io.Writer, data any) error {
	var buf bytes.Buffer
	if err := writeJSON(&buf, data); err != nil {
		return err
	}
	var node yaml.Node
	if err := yaml.Unmarshal(buf.Bytes(), &node); err != nil {
		return err
	}
	clearStyle(&node)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&node); err != nil {
		return err
	}
	return enc.Close()
}

// clearStyle drops the flow style JSON input gives every node, so the YAML
// comes out in block style.
func clearStyle(n *yaml.Node) { clearStyleCached(n, nil) }

// clearStyleCached is clearStyle remembering needsQuotes' answers in quotes
// (nil: none), for a stream of documents that repeat their values.
func clearStyleCached(n *yaml.Node, quotes map[string]bool) {
	n.Style &^= yaml.FlowStyle | yaml.DoubleQuotedStyle
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		q, ok := quotes[n.Value]
		if !ok {
			q = needsQuotes(n.Value)
			if quotes != nil && len(quotes) < maxQuoteCache {
				quotes[n.Value] = q
			}
		}
		if q {
			n.Style = yaml.DoubleQuotedStyle
		}
	}
	for _, c := range n.Content {
		clearStyleCached(c, quotes)
	}
}

// maxQuoteCache bounds clearStyleCached's memory: 4,096 values (field
// values and messages repeat; keys and owners do not).
const maxQuoteCache = 4096

// needsQuotes reports strings that would read back as another type in YAML:
// in YAML 1.2, or as a YAML 1.1 boolean (yes, on, n, ...: PyYAML reads a
// key named "on" as True).
func needsQuotes(s string) bool {
	switch strings.ToLower(s) {
	case "y", "yes", "n", "no", "on", "off":
		return true
	}
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		return true
	}
	_, isStr := v.(string)
	return !isStr || v.(string) != s
}

// TableView builds the table format: titled sections of aligned rows and
// lines of text, written in order. On a TTY tables get borders and colour;
// into a pipe they are plain aligned columns.
type TableView struct {
	p   *Printer
	err error
}

// Styles returns the printer's styles.
func (t *TableView) Styles() *Styles { return t.p.Styles }

// Title writes s, as given (not a format), as a section title.
func (t *TableView) Title(s string) {
	t.Line("%s", t.p.Styles.Title.Render(s))
}

// Width is the terminal's width in columns on a TTY, or 0 (no limit).
func (t *TableView) Width() int {
	if !t.p.TTY {
		return 0
	}
	return t.p.Width
}

// Line writes one line of text, wrapped at spaces to the terminal's width
// on a TTY (wrapWords: never inside a key or a token).
func (t *TableView) Line(format string, args ...any) {
	if t.err != nil {
		return
	}
	_, t.err = io.WriteString(t.p.Out, wrapWords(fmt.Sprintf(format, args...), t.Width())+"\n")
}

// Table writes header and rows as one aligned table.
func (t *TableView) Table(header []string, rows [][]string) {
	if t.err != nil {
		return
	}
	shown := make([][]string, len(rows))
	for r, row := range rows {
		shown[r] = make([]string, len(row))
		for c, cell := range row {
			shown[r][c] = escapeCell(cell, t.p.Color)
		}
	}
	t.err = renderTable(t.p.Out, t.p.TTY, t.p.Width, t.p.Styles, header, shown)
}

// Objects writes one row per object (a lock, a key) under cols: on a TTY
// fitted to the terminal by dropping the highest-ranked columns and
// shortening keys in the middle, never wrapping a cell (objectTable); with
// -o wide, or into a pipe, every column. It returns the headers of the
// columns left out, so that the caller can print what they hold whole.
func (t *TableView) Objects(cols []Column, rows [][]string) []string {
	if t.err != nil {
		return nil
	}
	shown := make([][]string, len(rows))
	for r, row := range rows {
		shown[r] = make([]string, len(row))
		for c, cell := range row {
			shown[r][c] = strings.ReplaceAll(escapeCell(cell, t.p.Color), "\t", tabSpaces)
		}
	}
	if !t.p.TTY {
		head := make([]string, len(cols))
		for i, c := range cols {
			head[i] = headerText(c.Name)
		}
		t.err = writeColumns(t.p.Out, append([][]string{head}, shown...))
		return nil
	}
	width := t.p.Width
	if t.p.Format == formatWide {
		width = 0
	}
	var dropped []string
	dropped, t.err = objectTable(t.p.Out, width, t.p.Styles, cols, shown)
	return dropped
}

// escapeCell writes a table cell's line breaks as \n and \r, and its
// control characters, bidi and line separator runes (isBidiOrLineBreak) and
// bytes that are not UTF-8 as controlEscaper does (the cell is the whole
// text: a rune cut at its end is escaped), before the columns are
// measured: a key or owner read from Redis with a newline in it
// would start a row of its own, and an escape sequence measured as zero
// width would shift the columns once escaped. With sgr, colour sequences
// pass: only for cells lockctl styled itself.
func escapeCell(cell string, sgr bool) string {
	var b strings.Builder
	_, _ = (&controlEscaper{w: &b, sgr: sgr, whole: true, bidi: true}).Write([]byte(lineBreaks.Replace(cell)))
	return b.String()
}

// oneLineText writes a text read from Redis (a key, an owner, a message
// quoting one) for one line or table cell of text output: line breaks as \n
// and \r, control characters and bytes that are not UTF-8 as \xNN, bidi
// and line separator runes as \uNNNN, colour sequences too (in data they
// are not lockctl's: ESC [8m would hide what follows on a colour terminal).
func oneLineText(s string) string { return escapeCell(s, false) }

var lineBreaks = strings.NewReplacer("\n", `\n`, "\r", `\r`)

// renderTable writes a table with header row: on a terminal with rounded
// borders, fitted to width columns when width > 0 (borderedTable), into a pipe as plain columns two spaces apart with no trailing
// spaces. Columns are as wide as their widest cell in terminal cells
// (lipgloss.Width: East Asian wide characters count 2, colour codes 0); a
// cell's lines are stacked.
func renderTable(w io.Writer, tty bool, width int, st *Styles, header []string, rows [][]string) error {
	head := make([]string, len(header))
	for i, h := range header {
		head[i] = headerText(h)
	}
	if tty {
		shown := make([][]string, len(rows))
		for r, row := range rows {
			shown[r] = make([]string, len(row))
			for c, cell := range row {
				// Tabs as spaces, so that lipgloss measures what is shown
				// (Table has escaped controls and bytes that are not UTF-8).
				shown[r][c] = strings.ReplaceAll(cell, "\t", tabSpaces)
			}
		}
		return borderedTable(w, width, st, head, shown)
	}
	return writeColumns(w, append([][]string{head}, rows...))
}

// tabSpaces stand for a tab in a table cell, so that it cannot break the
// columns; four, as lipgloss renders a tab.
const tabSpaces = "    "

// headerText is a header as tables show it: upper case, underscores as
// spaces, runs of spaces as one ("expires_at" and "expires  at" give
// "EXPIRES AT").
func headerText(h string) string {
	return strings.ToUpper(strings.Join(strings.Fields(strings.ReplaceAll(h, "_", " ")), " "))
}

// writeColumns writes rows as columns two spaces apart, each as wide as its
// widest cell, with trailing spaces dropped.
func writeColumns(w io.Writer, rows [][]string) error {
	var widths []int
	cells := make([][][]string, len(rows)) // row, column, line
	for r, row := range rows {
		cells[r] = make([][]string, len(row))
		for c, cell := range row {
			cell = strings.ReplaceAll(cell, "\t", tabSpaces)
			cells[r][c] = strings.Split(cell, "\n")
			if c == len(widths) {
				widths = append(widths, 0)
			}
			widths[c] = max(widths[c], cellWidth(cell))
		}
	}
	var b bytes.Buffer
	for _, row := range cells {
		height := 1
		for _, lines := range row {
			height = max(height, len(lines))
		}
		for l := range height {
			start := b.Len()
			for c, lines := range row {
				text := ""
				if l < len(lines) {
					text = lines[l]
				}
				b.WriteString(text)
				if c < len(row)-1 {
					b.WriteString(strings.Repeat(" ", widths[c]-cellWidth(text)+2))
				}
			}
			b.Truncate(start + len(bytes.TrimRight(b.Bytes()[start:], " ")))
			b.WriteByte('\n')
		}
	}
	_, err := b.WriteTo(w)
	return err
}

// cellWidth is the width of s in terminal cells by lipgloss.Width, with each
// byte that is not UTF-8 counted as the U+FFFD a terminal shows for it.
func cellWidth(s string) int {
	if printableASCII(s) { // one cell a byte: skips lipgloss's ANSI parser
		return len(s)
	}
	if !utf8.ValidString(s) {
		s = string([]rune(s))
	}
	return lipgloss.Width(s)
}

// printableASCII reports whether s is only bytes 0x20 to 0x7e: no escape
// sequence, no wide or combining character.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
