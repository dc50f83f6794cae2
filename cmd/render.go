package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"go.yaml.in/yaml/v3"
)

// Output formats every data command offers; some add their own.
const (
	formatTable = "table"
	formatJSON  = "json"
	formatYAML  = "yaml"
)

// dataFormats are the formats of a plain data command.
var dataFormats = []string{formatTable, formatJSON, formatYAML}

// The formats of inspect, watch and simulate, beside dataFormats and checklistFormats.
var (
	inspectFormats  = []string{formatTable, formatJSON, formatYAML, formatJSONL}
	watchFormats    = []string{formatTable, formatJSONL}
	simulateFormats = []string{formatTable, formatJSON, formatYAML, formatMermaid}
)

// allFormats are offered by shell completion of -o for a command that does
// not declare its own with outputFormats.
var allFormats = []string{formatTable, formatJSON, formatYAML, "jsonl", "markdown", "junit", "sarif", "github", "mermaid"}

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
}

// newPrinter returns the printer for this invocation's stdout.
func (f *Factory) newPrinter(format string) *Printer {
	color := colorWanted(f.IO.OutTTY, f.Config.GetBool(keyNoColor))
	return &Printer{Format: format, Out: &controlEscaper{w: f.IO.Out, sgr: color}, TTY: f.IO.OutTTY, Styles: newStyles(f.IO.Out, color)}
}

// controlEscaper writes text with every control character written as \xNN
// (C0 but newline and tab, DEL, and the C1 runes U+0080..U+009F), so a key
// name or owner token read from Redis cannot move the cursor, clear or
// retitle the terminal (ECMA-48 escape and control sequences). With sgr,
// our own colour sequences (ESC [ digits and ; m) pass. JSON already
// escapes control characters, so only text formats change.
type controlEscaper struct {
	w   io.Writer
	sgr bool
}

func (c *controlEscaper) Write(b []byte) (int, error) {
	clean := true
	for _, x := range b {
		if x < 0x20 && x != '\n' && x != '\t' || x == 0x7f || x == 0xc2 {
			clean = false
			break
		}
	}
	if clean {
		return c.w.Write(b)
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		x := b[i]
		switch {
		case x == 0x1b && c.sgr && sgrLen(b[i:]) > 0:
			n := sgrLen(b[i:])
			out = append(out, b[i:i+n]...)
			i += n
			continue
		case x < 0x20 && x != '\n' && x != '\t' || x == 0x7f:
			out = fmt.Appendf(out, "\\x%02x", x)
		case x == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] <= 0x9f:
			out = fmt.Appendf(out, "\\u%04x", b[i+1])
			i += 2
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
func clearStyle(n *yaml.Node) {
	n.Style &^= yaml.FlowStyle | yaml.DoubleQuotedStyle
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && needsQuotes(n.Value) {
		n.Style = yaml.DoubleQuotedStyle
	}
	for _, c := range n.Content {
		clearStyle(c)
	}
}

// needsQuotes reports strings that would read back as another type in YAML.
func needsQuotes(s string) bool {
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

// Title writes a section title.
func (t *TableView) Title(s string) {
	t.Line(t.p.Styles.Title.Render(s))
}

// Line writes one line of text.
func (t *TableView) Line(format string, args ...any) {
	if t.err != nil {
		return
	}
	_, t.err = fmt.Fprintf(t.p.Out, format+"\n", args...)
}

// Table writes header and rows as one aligned table.
func (t *TableView) Table(header []string, rows [][]string) {
	if t.err != nil {
		return
	}
	t.err = renderTable(t.p.Out, t.p.TTY, header, rows)
}

func renderTable(w io.Writer, tty bool, header []string, rows [][]string) error {
	var opts []tablewriter.Option
	if tty {
		opts = append(opts, tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleRounded)})))
	} else {
		opts = append(opts, tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenRows: tw.Off, BetweenColumns: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.Off},
			},
		})))
	}
	opts = append(opts,
		tablewriter.WithHeaderAutoFormat(tw.On),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithTrimSpace(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
	)
	var buf bytes.Buffer
	tbl := tablewriter.NewTable(&buf, opts...)
	tbl.Header(header)
	if err := tbl.Bulk(rows); err != nil {
		return err
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	out := buf.String()
	if !tty {
		out = trimLines(out)
	}
	_, err := io.WriteString(w, out)
	return err
}

// trimLines drops trailing spaces and the leading column padding of plain tables.
func trimLines(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(strings.TrimPrefix(l, " "), " ")
	}
	return strings.Join(lines, "\n") + "\n"
}
